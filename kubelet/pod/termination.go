package pod

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"minik8s/kubelet/logs"
	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
)

// A container's termination message, as Kubernetes' kubelet keeps it: a
// file of the pod's dir is mounted at the container's
// terminationMessagePath; what the container wrote there (its first 4096
// bytes) is the message of its terminated state. With
// FallbackToLogsOnError, a container that failed and wrote nothing gets
// the end of its log instead (80 lines, 2048 bytes).
const (
	maxTerminationMessage = 4096
	fallbackLines         = 80
	maxFallbackMessage    = 2048
)

func terminationPath(podDir, container string) string {
	return filepath.Join(podDir, "termination", container)
}

// terminationMount makes container c's message file, empty for this
// attempt, and mounts it at c's terminationMessagePath; none without one.
func (w *Worker) terminationMount(c api.Container) ([]containerd.Mount, error) {
	if c.TerminationMessagePath == "" {
		return nil, nil
	}
	path := terminationPath(w.dir, c.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		return nil, err
	}
	// Whatever user the container runs as may write it (the umask aside).
	if err := os.Chmod(path, 0o666); err != nil {
		return nil, err
	}
	return []containerd.Mount{{Source: path, Destination: c.TerminationMessagePath}}, nil
}

// terminationMessage is what container spec said of its end (exit code).
func (w *Worker) terminationMessage(ctx context.Context, spec api.Container, exitCode int32) string {
	if spec.TerminationMessagePath != "" {
		if f, err := os.Open(terminationPath(w.dir, spec.Name)); err == nil {
			data, _ := io.ReadAll(io.LimitReader(f, maxTerminationMessage))
			f.Close()
			if len(data) > 0 {
				return string(data)
			}
		}
	}
	if spec.TerminationMessagePolicy != string(corev1.TerminationMessageFallbackToLogsOnError) || exitCode == 0 {
		return ""
	}
	var tail bytes.Buffer
	if err := logs.Stream(ctx, logs.Path(w.dir, spec.Name), logs.StreamOptions{TailLines: fallbackLines}, &tail, nil, nil); err != nil {
		return ""
	}
	out := tail.Bytes()
	if len(out) > maxFallbackMessage {
		out = out[len(out)-maxFallbackMessage:]
	}
	return string(out)
}
