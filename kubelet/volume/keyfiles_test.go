package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// ConfigMap and Secret volumes take Kubernetes' items, defaultMode and
// optional alike.
func TestKeyItems(t *testing.T) {
	cms := fakeConfigMaps{"ns/app": {Data: map[string]string{"nginx.conf": "server {}", "extra": "x"}}}
	secrets := fakeSecrets{"ns/db": {Data: map[string][]byte{"password": []byte("s3cret"), "user": []byte("admin")}}}
	item := func(key, path string, mode ...int32) corev1.KeyToPath {
		it := corev1.KeyToPath{Key: key, Path: path}
		if len(mode) > 0 {
			it.Mode = &mode[0]
		}
		return it
	}
	tests := []struct {
		name  string
		vol   api.Volume
		files map[string]os.FileMode // name -> mode
		err   func(error) bool
	}{
		{"configMap items", api.Volume{ConfigMap: &api.ConfigMapVolumeSource{Name: "app", Items: []corev1.KeyToPath{item("nginx.conf", "default.conf")}}},
			map[string]os.FileMode{"default.conf": 0o644}, nil},
		{"configMap defaultMode and an item's mode", api.Volume{ConfigMap: &api.ConfigMapVolumeSource{Name: "app", DefaultMode: ptr(int32(0o600)),
			Items: []corev1.KeyToPath{item("nginx.conf", "a"), item("extra", "b", 0o755)}}},
			map[string]os.FileMode{"a": 0o600, "b": 0o755}, nil},
		{"configMap optional and missing", api.Volume{ConfigMap: &api.ConfigMapVolumeSource{Name: "gone", Optional: ptr(true)}}, map[string]os.FileMode{}, nil},
		{"configMap missing", api.Volume{ConfigMap: &api.ConfigMapVolumeSource{Name: "gone"}}, nil, errdefs.IsNotFound},
		{"an item's key missing", api.Volume{ConfigMap: &api.ConfigMapVolumeSource{Name: "app", Items: []corev1.KeyToPath{item("nope", "a")}}}, nil, errdefs.IsInvalid},
		{"an item's key missing, optional", api.Volume{ConfigMap: &api.ConfigMapVolumeSource{Name: "app", Optional: ptr(true),
			Items: []corev1.KeyToPath{item("nope", "a"), item("extra", "b")}}}, map[string]os.FileMode{"b": 0o644}, nil},
		{"an item's path in a dir", api.Volume{ConfigMap: &api.ConfigMapVolumeSource{Name: "app", Items: []corev1.KeyToPath{item("extra", "conf/b"), item("nginx.conf", "conf/sub/c", 0o600)}}},
			map[string]os.FileMode{"conf/b": 0o644, "conf/sub/c": 0o600}, nil},
		{"an item's path through ..", api.Volume{ConfigMap: &api.ConfigMapVolumeSource{Name: "app", Items: []corev1.KeyToPath{item("extra", "conf/../../b")}}}, nil, errdefs.IsInvalid},
		{"an item's path out of the volume", api.Volume{Secret: &api.SecretVolumeSource{SecretName: "db", Items: []corev1.KeyToPath{item("user", "../../etc/x")}}}, nil, errdefs.IsInvalid},
		{"an item's mode too wide", api.Volume{Secret: &api.SecretVolumeSource{SecretName: "db", Items: []corev1.KeyToPath{item("user", "u", 0o4755)}}}, nil, errdefs.IsInvalid},
		{"secret items", api.Volume{Secret: &api.SecretVolumeSource{SecretName: "db", DefaultMode: ptr(int32(0o400)), Items: []corev1.KeyToPath{item("password", "pw")}}},
			map[string]os.FileMode{"pw": 0o400}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			podDir := t.TempDir()
			tt.vol.Name = "v"
			pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: api.PodSpec{Volumes: []api.Volume{tt.vol}}}
			vols, err := Prepare(context.Background(), pod, podDir, fakeGetter{cms, secrets}, nil)
			if tt.err != nil {
				if !tt.err(err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir := vols["v"].HostPath
			tops := map[string]bool{}
			for name := range tt.files {
				top, _, _ := strings.Cut(name, "/")
				tops[top] = true
			}
			if got := visibleFiles(t, dir); len(got) != len(tops) {
				t.Errorf("files %v, want %v", got, tt.files)
			}
			for name, mode := range tt.files {
				if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode().Perm() != mode {
					t.Errorf("%s: %v, %v; want mode %v", name, st, err, mode)
				}
			}
		})
	}
}
