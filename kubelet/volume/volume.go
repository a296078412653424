// Package volume prepares the volumes of a pod on the node: emptyDir dirs
// in the pod's dir, hostPath dirs, configMap and secret files written from
// their objects when the pod starts, and the service account token.
package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// ConfigMapGetter reads ConfigMap objects.
type ConfigMapGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*api.ConfigMap, error)
}

// SecretGetter reads Secret objects.
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*api.Secret, error)
}

// Getter reads the objects volumes are made from.
type Getter interface {
	ConfigMapGetter
	SecretGetter
}

// defaultSecretMode is the mode of a Secret volume's files unless it says
// otherwise, as in Kubernetes.
const defaultSecretMode os.FileMode = 0o644

// Volume is a prepared volume: the host path to bind and whether it must be
// mounted read-only whatever the mount says.
type Volume struct {
	HostPath string
	ReadOnly bool
}

// Dir is where a pod's volumes live under its pod dir.
func Dir(podDir string) string { return filepath.Join(podDir, "volumes") }

// Prepare makes every volume of the pod ready on the host. An error names
// the field at fault (errdefs.Invalid) or the missing ConfigMap or Secret
// (NotFound).
// allocatable is the node's, which a downwardAPI file gives for a limit a
// container does not set.
func Prepare(ctx context.Context, pod *api.Pod, podDir string, src Getter, allocatable api.ResourceList) (map[string]Volume, error) {
	out := map[string]Volume{}
	for i, v := range pod.Spec.Volumes {
		field := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case v.EmptyDir != nil:
			dir := filepath.Join(Dir(podDir), "empty-dir", v.Name)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, fmt.Errorf("%s: emptyDir: %w", field, err)
			}
			if v.EmptyDir.Medium == corev1.StorageMediumMemory {
				var size int64
				if v.EmptyDir.SizeLimit != nil {
					size = v.EmptyDir.SizeLimit.Value()
				}
				if err := mountMemory(dir, size); err != nil {
					return nil, fmt.Errorf("%s: emptyDir: %w", field, err)
				}
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
			cm, err := src.GetConfigMap(ctx, pod.Namespace, v.ConfigMap.Name)
			if err != nil {
				return nil, fmt.Errorf("%s: configMap %q: %w", field, v.ConfigMap.Name, err)
			}
			dir := filepath.Join(Dir(podDir), "configmap", v.Name)
			if err := WriteFiles(dir, configMapFiles(cm), 0o644); err != nil {
				return nil, fmt.Errorf("%s: configMap %q: %w", field, v.ConfigMap.Name, err)
			}
			out[v.Name] = Volume{HostPath: dir, ReadOnly: true}
		case v.Secret != nil:
			dir := filepath.Join(Dir(podDir), "secret", v.Name)
			if err := secretVolume(ctx, pod.Namespace, v.Secret, field, dir, src); err != nil {
				return nil, err
			}
			out[v.Name] = Volume{HostPath: dir, ReadOnly: true}
		case v.DownwardAPI != nil:
			dir := filepath.Join(Dir(podDir), "downward-api", v.Name)
			if err := downwardAPIVolume(pod, v.DownwardAPI, field, dir, allocatable); err != nil {
				return nil, err
			}
			out[v.Name] = Volume{HostPath: dir, ReadOnly: true}
		default:
			return nil, errdefs.Invalid(field, "volume %q has no source (emptyDir, hostPath, configMap, secret or downwardAPI)", v.Name)
		}
		if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil && v.HostPath == nil {
			if err := SetGroup(out[v.Name].HostPath, *sc.FSGroup, out[v.Name].ReadOnly); err != nil {
				return nil, fmt.Errorf("%s: giving the volume to fsGroup %d: %w", field, *sc.FSGroup, err)
			}
		}
	}
	return out, nil
}

// SetGroup gives the volume at dir to group gid, as Kubernetes does for a
// pod's fsGroup: every file's group is gid and the group may read it
// (and write it, unless readOnly); directories are set-group-ID so that
// what the containers make there belongs to the group too.
func SetGroup(dir string, gid int64, readOnly bool) error {
	mask := os.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	return filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, int(gid)); err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		m := mask
		if info.IsDir() {
			m |= os.ModeSetgid | 0o110
		}
		return os.Chmod(path, info.Mode()|m)
	})
}

// configMapFiles are the files of a ConfigMap volume: one per key.
func configMapFiles(cm *api.ConfigMap) map[string][]byte {
	files := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		files[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		files[k] = v
	}
	return files
}

// secretVolume writes the files of a Secret volume. A missing Secret is
// an error unless the volume is optional: then the dir is empty.
func secretVolume(ctx context.Context, ns string, src *api.SecretVolumeSource, field, dir string, secrets SecretGetter) error {
	mode := defaultSecretMode
	if m := src.DefaultMode; m != nil {
		if *m < 0 || *m > 0o777 {
			return errdefs.Invalid(field+".secret.defaultMode", "%#o is not a file mode (0 to 0777)", *m)
		}
		mode = os.FileMode(*m)
	}
	if src.SecretName == "" {
		return errdefs.Invalid(field+".secret.secretName", "a secret volume names its Secret")
	}
	files := map[string][]byte{}
	s, err := secrets.GetSecret(ctx, ns, src.SecretName)
	switch {
	case errdefs.IsNotFound(err) && src.Optional != nil && *src.Optional:
	case err != nil:
		return fmt.Errorf("%s: secret %q: %w", field, src.SecretName, err)
	default:
		files = s.Data
	}
	if err := WriteFiles(dir, files, mode); err != nil {
		return fmt.Errorf("%s: secret %q: %w", field, src.SecretName, err)
	}
	return nil
}
