// Package volume prepares the volumes of a pod on the node: emptyDir dirs
// in the pod's dir, hostPath dirs, configMap and secret files written from
// their objects when the pod starts, and the service account token.
package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

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

// Getter reads the objects volumes are made from, and asks the tokens
// projected volumes hold.
type Getter interface {
	ConfigMapGetter
	SecretGetter
	TokenRequester
}

// defaultFileMode is the mode of a ConfigMap or Secret volume's files
// unless it says otherwise, as in Kubernetes.
const defaultFileMode os.FileMode = 0o644

// Volume is a prepared volume: the host path to bind and whether it must be
// mounted read-only whatever the mount says.
type Volume struct {
	HostPath string
	ReadOnly bool
	// RefreshAt, when set, is when the volume is to be written again (a
	// projected token's renewal, see Projected).
	RefreshAt time.Time
}

// Dir is where a pod's volumes live under its pod dir.
func Dir(podDir string) string { return filepath.Join(podDir, "volumes") }

// RefreshPeriod is how often a volume of the API's data (a ConfigMap's, a
// Secret's, the downward API's, a projected one) is written again, so
// that a change of the ConfigMap or of the pod's labels reaches the
// running containers, as Kubernetes' kubelet does (within its sync
// period); files that did not change are left as they are.
const RefreshPeriod = 15 * time.Second

// Prepare makes every volume of the pod ready on the host. An error names
// the field at fault (errdefs.Invalid) or the missing ConfigMap or Secret
// (NotFound).
// allocatable is the node's, which a downwardAPI file gives for a limit a
// container does not set.
func Prepare(ctx context.Context, pod *api.Pod, podDir string, src Getter, allocatable api.ResourceList) (map[string]Volume, error) {
	out := map[string]Volume{}
	for i, v := range pod.Spec.Volumes {
		vol, err := prepare(ctx, pod, podDir, i, src, allocatable)
		if err != nil {
			return nil, err
		}
		out[v.Name] = vol
	}
	return out, nil
}

// Refresh writes volume i of the pod again, when it holds the API's data
// (its RefreshAt is set): its files as they are now.
func Refresh(ctx context.Context, pod *api.Pod, podDir string, i int, src Getter, allocatable api.ResourceList) (Volume, error) {
	return prepare(ctx, pod, podDir, i, src, allocatable)
}

// prepare makes volume i ready.
func prepare(ctx context.Context, pod *api.Pod, podDir string, i int, src Getter, allocatable api.ResourceList) (Volume, error) {
	v := pod.Spec.Volumes[i]
	field := fmt.Sprintf("spec.volumes[%d]", i)
	var out Volume
	refresh := time.Now().Add(RefreshPeriod)
	switch {
	case v.EmptyDir != nil:
		dir := filepath.Join(Dir(podDir), "empty-dir", v.Name)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return Volume{}, fmt.Errorf("%s: emptyDir: %w", field, err)
		}
		if v.EmptyDir.Medium == corev1.StorageMediumMemory {
			var size int64
			if v.EmptyDir.SizeLimit != nil {
				size = v.EmptyDir.SizeLimit.Value()
			}
			if err := mountMemory(dir, size); err != nil {
				return Volume{}, fmt.Errorf("%s: emptyDir: %w", field, err)
			}
		}
		// Containers may run as any user.
		_ = os.Chmod(dir, 0o777)
		out = Volume{HostPath: dir}
	case v.HostPath != nil:
		if !filepath.IsAbs(v.HostPath.Path) {
			return Volume{}, errdefs.Invalid(field+".hostPath.path", "%q is not an absolute path", v.HostPath.Path)
		}
		if err := os.MkdirAll(v.HostPath.Path, 0o755); err != nil {
			// A hostPath may name an existing file (a socket, say).
			if st, serr := os.Stat(v.HostPath.Path); serr != nil || st.IsDir() {
				return Volume{}, fmt.Errorf("%s: hostPath: %w", field, err)
			}
		}
		return Volume{HostPath: filepath.Clean(v.HostPath.Path)}, nil
	case v.ConfigMap != nil:
		dir := filepath.Join(Dir(podDir), "configmap", v.Name)
		if err := configMapVolume(ctx, pod.Namespace, v.ConfigMap, field, dir, src); err != nil {
			return Volume{}, err
		}
		out = Volume{HostPath: dir, ReadOnly: true, RefreshAt: refresh}
	case v.Secret != nil:
		dir := filepath.Join(Dir(podDir), "secret", v.Name)
		if err := secretVolume(ctx, pod.Namespace, v.Secret, field, dir, src); err != nil {
			return Volume{}, err
		}
		out = Volume{HostPath: dir, ReadOnly: true, RefreshAt: refresh}
	case v.Projected != nil:
		// Its fsGroup is Projected's, which writes it again.
		vol, err := Projected(ctx, pod, podDir, i, src, allocatable)
		if err == nil && (vol.RefreshAt.IsZero() || refresh.Before(vol.RefreshAt)) {
			vol.RefreshAt = refresh
		}
		return vol, err
	case v.DownwardAPI != nil:
		dir := filepath.Join(Dir(podDir), "downward-api", v.Name)
		if err := downwardAPIVolume(pod, v.DownwardAPI, field, dir, allocatable); err != nil {
			return Volume{}, err
		}
		out = Volume{HostPath: dir, ReadOnly: true, RefreshAt: refresh}
	case v.PersistentVolumeClaim != nil:
		vol, err := claimVolume(ctx, pod.Namespace, v.PersistentVolumeClaim, field, src)
		if err != nil {
			return Volume{}, err
		}
		out = vol
	default:
		return Volume{}, errdefs.Invalid(field, "volume %q has no source (emptyDir, hostPath, configMap, secret, downwardAPI, projected or persistentVolumeClaim)", v.Name)
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		if err := SetGroup(out.HostPath, *sc.FSGroup, out.ReadOnly); err != nil {
			return Volume{}, fmt.Errorf("%s: giving the volume to fsGroup %d: %w", field, *sc.FSGroup, err)
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

// configMapVolume writes the files of a ConfigMap volume. A missing
// ConfigMap is an error unless the volume is optional: then the dir is
// empty.
func configMapVolume(ctx context.Context, ns string, src *api.ConfigMapVolumeSource, field, dir string, cms ConfigMapGetter) error {
	field += ".configMap"
	if _, err := fileMode(src.DefaultMode, field+".defaultMode"); err != nil {
		return err
	}
	data, err := objectData(ctx, ns, "configMap", src.Name, field, src.Optional, cms, nil)
	if err != nil {
		return err
	}
	return keyFiles(dir, data, keySource{field, "configMap " + strconv.Quote(src.Name), src.Items, src.DefaultMode, src.Optional})
}

// objectData is the keys of the ConfigMap or Secret (kind "configMap" or
// "secret") a volume or a projected source names: none when it is missing
// and the source optional, an error naming field otherwise.
func objectData(ctx context.Context, ns, kind, name, field string, optional *bool, cms ConfigMapGetter, secrets SecretGetter) (map[string][]byte, error) {
	var data map[string][]byte
	var err error
	if kind == "configMap" {
		var cm *api.ConfigMap
		if cm, err = cms.GetConfigMap(ctx, ns, name); err == nil {
			data = configMapFiles(cm)
		}
	} else {
		var s *api.Secret
		if s, err = secrets.GetSecret(ctx, ns, name); err == nil {
			data = s.Data
		}
	}
	switch {
	case errdefs.IsNotFound(err) && optional != nil && *optional:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%s: %s %q: %w", field, kind, name, err)
	}
	return data, nil
}

// configMapFiles are a ConfigMap's keys and values.
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
	field += ".secret"
	if _, err := fileMode(src.DefaultMode, field+".defaultMode"); err != nil {
		return err
	}
	if src.SecretName == "" {
		return errdefs.Invalid(field+".secretName", "a secret volume names its Secret")
	}
	data, err := objectData(ctx, ns, "secret", src.SecretName, field, src.Optional, nil, secrets)
	if err != nil {
		return err
	}
	return keyFiles(dir, data, keySource{field, "secret " + strconv.Quote(src.SecretName), src.Items, src.DefaultMode, src.Optional})
}

// keySource is what a ConfigMap or Secret volume asks of its keys.
type keySource struct {
	field, what string
	items       []corev1.KeyToPath
	defaultMode *int32
	optional    *bool
}

// keyFiles writes data's keys as files in dir, as Kubernetes does: every
// key, or only those items name, each at its item's path (a plain name
// here) with its item's mode or the default one. A key an item names that
// data lacks is an error unless the volume is optional.
func keyFiles(dir string, data map[string][]byte, src keySource) error {
	files, modes, err := keyFileSet(data, src)
	if err != nil {
		return err
	}
	if err := writeFiles(dir, files, func(name string) os.FileMode { return modes[name] }); err != nil {
		return fmt.Errorf("%s: %s: %w", src.field, src.what, err)
	}
	return nil
}

// keyFileSet is keyFiles' files and their modes, unwritten.
func keyFileSet(data map[string][]byte, src keySource) (map[string][]byte, map[string]os.FileMode, error) {
	mode, err := fileMode(src.defaultMode, src.field+".defaultMode")
	if err != nil {
		return nil, nil, err
	}
	files, modes := map[string][]byte{}, map[string]os.FileMode{}
	if len(src.items) == 0 {
		for k, v := range data {
			files[k], modes[k] = v, mode
		}
	}
	for i, item := range src.items {
		at := fmt.Sprintf("%s.items[%d]", src.field, i)
		v, ok := data[item.Key]
		if !ok {
			if src.optional != nil && *src.optional {
				continue
			}
			return nil, nil, errdefs.Invalid(at+".key", "%s has no key %q", src.what, item.Key)
		}
		if err := checkPath(item.Path); err != nil {
			return nil, nil, errdefs.Invalid(at+".path", "%q must be a relative path without '..'", item.Path)
		}
		m := mode
		if item.Mode != nil {
			if m, err = fileMode(item.Mode, at+".mode"); err != nil {
				return nil, nil, err
			}
		}
		files[item.Path], modes[item.Path] = v, m
	}
	return files, modes, nil
}

// fileMode is a volume's file mode: m, or 0644.
func fileMode(m *int32, field string) (os.FileMode, error) {
	if m == nil {
		return defaultFileMode, nil
	}
	if *m < 0 || *m > 0o777 {
		return 0, errdefs.Invalid(field, "%#o is not a file mode (0 to 0777)", *m)
	}
	return os.FileMode(*m), nil
}
