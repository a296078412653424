package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// securityPod's containers each print one line that says whether their
// security context was applied.
const securityPod = `apiVersion: v1
kind: Pod
metadata:
  name: sec
spec:
  nodeName: node-s
  restartPolicy: Never
  securityContext:
    fsGroup: 2000
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: user
    image: IMAGE
    command: ["id", "-u"]
    securityContext:
      runAsUser: 1000
      runAsNonRoot: true
  - name: readonly
    image: IMAGE
    command: ["sh", "-c", "touch /x 2>/dev/null && echo wrote || echo read-only"]
    securityContext:
      readOnlyRootFilesystem: true
  - name: nochown
    image: IMAGE
    command: ["sh", "-c", "chown 1 /tmp 2>/dev/null && echo chowned || echo no-chown"]
    securityContext:
      capabilities:
        drop: ["CHOWN"]
  - name: fsgroup
    image: IMAGE
    command: ["sh", "-c", "touch /data/f && stat -c %g /data/f"]
    securityContext:
      runAsUser: 1000
      allowPrivilegeEscalation: false
    volumeMounts:
    - name: data
      mountPath: /data
  - name: seccomp
    image: IMAGE
    command: ["sh", "-c", "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | tr '\\t\\n' '  '"]
---
apiVersion: v1
kind: Pod
metadata:
  name: root
spec:
  nodeName: node-s
  containers:
  - name: c
    image: IMAGE
    securityContext:
      runAsNonRoot: true
`

// TestPodSecurityContext: a manifest's security contexts, applied with
// kubectl, are what the containers' processes get from the kernel (their
// user, a read-only root, a dropped capability, the fsGroup's ownership of
// a volume, seccomp's default filter); runAsNonRoot keeps a root image
// from starting and says why; and what minik8s does not do is refused
// naming the field.
func TestPodSecurityContext(t *testing.T) {
	t.Parallel()
	as := applyOnNode(t, "node-s", "127.0.0.29", securityPod, nil, "pod/sec created")
	run := func(want string, args ...string) string { t.Helper(); return mustKubectl(t, as, want, args...) }

	waitPod(t, as.Client, "sec", 90*time.Second, "Succeeded", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
	})
	for container, want := range map[string]string{
		"user":     "1000",
		"readonly": "read-only",
		"nochown":  "no-chown",
		"fsgroup":  "2000",
		"seccomp":  "NoNewPrivs: 0 Seccomp: 2",
	} {
		if got := strings.TrimSpace(run("", "logs", "sec", "-c", container)); got != want {
			t.Errorf("container %s printed %q, want %q", container, got, want)
		}
	}
	run("Succeeded", "get", "pod", "sec", "-o", "jsonpath={.status.phase}")

	root := waitPod(t, as.Client, "root", 60*time.Second, "refused by runAsNonRoot", func(p *api.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	if msg := root.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "runAsNonRoot and image will run as root") {
		t.Errorf("runAsNonRoot of a root image: waiting message %q", msg)
	}
	run("image will run as root", "describe", "pod", "root")

	for field, override := range map[string]string{
		"spec.hostPID": `{"spec":{"hostPID":true}}`,
		"spec.containers[0].securityContext.procMount": `{"spec":{"containers":[{"name":"bad","image":"i","securityContext":{"procMount":"Unmasked"}}]}}`,
		"spec.securityContext.seccompProfile.type":     `{"spec":{"securityContext":{"seccompProfile":{"type":"Localhost","localhostProfile":"p.json"}}}}`,
	} {
		_, errOut, err := kubectl(t, as, "run", "bad", "--image", containerdtest.PythonRuntimeImage, "--overrides", override)
		if err == nil || !strings.Contains(errOut, field) {
			t.Errorf("%s: %v, want an error naming it:\n%s", override, err, errOut)
		}
	}
}

// applyOnNode starts a containerd with the Python image, an apiserver and
// a kubelet of node at ip, and applies manifest with kubectl, each IMAGE
// in it the image and each key of vars its value.
func applyOnNode(t *testing.T, node, ip, manifest string, vars map[string]string, created string) *framework.APIServer {
	t.Helper()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	as := framework.StartAPIServer(t)
	framework.StartKubelet(t, as.URL, ctd, node, ip)
	pairs := []string{"IMAGE", containerdtest.PythonRuntimeImage}
	for k, v := range vars {
		pairs = append(pairs, k, v)
	}
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(strings.NewReplacer(pairs...).Replace(manifest)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, as, created, "apply", "-f", path)
	return as
}
