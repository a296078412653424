// Package volume prepares the volumes of a pod on the node: emptyDir dirs
// in the pod's dir, hostPath dirs, and configMap files written from the
// ConfigMap object when the pod starts.
package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// ConfigMapGetter reads ConfigMap objects.
type ConfigMapGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*api.ConfigMap, error)
}

// Volume is a prepared volume: the host path to bind and whether it must be
// mounted read-only whatever the mount says.
type Volume struct {
	HostPath string
	ReadOnly bool
}

// Dir is where a pod's volumes live under its pod dir.
func Dir(podDir string) string { return filepath.Join(podDir, "volumes") }

// Prepare makes every volume of the pod ready on the host. An error names
// the field at fault (errdefs.Invalid) or the missing ConfigMap (NotFound).
func Prepare(ctx context.Context, pod *api.Pod, podDir string, cms ConfigMapGetter) (map[string]Volume, error) {
	out := map[string]Volume{}
	for i, v := range pod.Spec.Volumes {
		field := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case v.EmptyDir != nil:
			dir := filepath.Join(Dir(podDir), "empty-dir", v.Name)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, fmt.Errorf("%s: emptyDir: %w", field, err)
			}
			// Containers may run as any user.
			_ = os.Chmod(dir, 0o777)
			out[v.Name] = Volume{HostPath: dir}
		case v.HostPath != nil:
			if !filepath.IsAbs(v.HostPath.Path) {
				return nil, errdefs.Invalid(field+".hostPath.path", "%q is not an absolute path", v.HostPath.Path)
			}
			if err := os.MkdirAll(v.HostPath.Path, 0o755); err != nil {
				// A hostPath may name an existing file (a socket, say).
				if st, serr := os.Stat(v.HostPath.Path); serr != nil || st.IsDir() {
					return nil, fmt.Errorf("%s: hostPath: %w", field, err)
				}
			}
			out[v.Name] = Volume{HostPath: filepath.Clean(v.HostPath.Path)}
		case v.ConfigMap != nil:
			cm, err := cms.GetConfigMap(ctx, pod.Namespace, v.ConfigMap.Name)
			if err != nil {
				return nil, fmt.Errorf("%s: configMap %q: %w", field, v.ConfigMap.Name, err)
			}
			dir := filepath.Join(Dir(podDir), "configmap", v.Name)
			if err := writeConfigMap(dir, cm); err != nil {
				return nil, fmt.Errorf("%s: configMap %q: %w", field, v.ConfigMap.Name, err)
			}
			out[v.Name] = Volume{HostPath: dir, ReadOnly: true}
		default:
			return nil, errdefs.Invalid(field, "volume %q has no source (emptyDir, hostPath or configMap)", v.Name)
		}
	}
	return out, nil
}

// writeConfigMap writes one file per key into a fresh dir and swaps it in,
// so that a container never sees half the files.
func writeConfigMap(dir string, cm *api.ConfigMap) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+"-")
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	for k := range cm.BinaryData {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" || k == "." || k == ".." || strings.ContainsAny(k, "/\x00") {
			os.RemoveAll(tmp)
			return errdefs.Invalid("data", "key %q is not a valid file name", k)
		}
		data := []byte(cm.Data[k])
		if b, ok := cm.BinaryData[k]; ok {
			data = b
		}
		if err := os.WriteFile(filepath.Join(tmp, k), data, 0o644); err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return os.Rename(tmp, dir)
}
