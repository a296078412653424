package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

func ptr[T any](v T) *T { return &v }

func TestSecretVolume(t *testing.T) {
	secrets := fakeSecrets{"ns/db": {Data: map[string][]byte{"user": []byte("admin"), "password": []byte("s3cret")}}}
	tests := []struct {
		name  string
		src   api.SecretVolumeSource
		files map[string]string // name -> content; nil: an empty dir
		mode  os.FileMode
	}{
		{"default mode", api.SecretVolumeSource{SecretName: "db"}, map[string]string{"user": "admin", "password": "s3cret"}, 0o644},
		{"defaultMode", api.SecretVolumeSource{SecretName: "db", DefaultMode: ptr(int32(0o400))}, map[string]string{"user": "admin", "password": "s3cret"}, 0o400},
		{"optional and missing", api.SecretVolumeSource{SecretName: "gone", Optional: ptr(true)}, nil, 0},
		{"optional and there", api.SecretVolumeSource{SecretName: "db", Optional: ptr(true)}, map[string]string{"user": "admin", "password": "s3cret"}, 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			podDir := t.TempDir()
			pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns"},
				Spec: api.PodSpec{Volumes: []api.Volume{{Name: "creds", Secret: &tt.src}}}}
			vols, err := Prepare(context.Background(), pod, podDir, fakeGetter{nil, secrets}, nil)
			if err != nil {
				t.Fatal(err)
			}
			v := vols["creds"]
			if want := filepath.Join(Dir(podDir), "secret", "creds"); v.HostPath != want || !v.ReadOnly {
				t.Errorf("volume = %+v, want %s read-only", v, want)
			}
			if got := visibleFiles(t, v.HostPath); len(got) != len(tt.files) {
				t.Errorf("files %v, want %v", got, tt.files)
			}
			for name, want := range tt.files {
				path := filepath.Join(v.HostPath, name)
				if data, err := os.ReadFile(path); err != nil || string(data) != want {
					t.Errorf("%s = %q, %v; want %q", name, data, err, want)
				}
				if st, err := os.Stat(path); err != nil || st.Mode().Perm() != tt.mode {
					t.Errorf("%s mode = %v, %v; want %v", name, st.Mode().Perm(), err, tt.mode)
				}
			}
		})
	}
}

// visibleFiles are the names in dir that are not the writer's own.
func visibleFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if len(e.Name()) < 2 || e.Name()[:2] != ".." {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteFilesInPlace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	// A dir of an earlier kubelet: plain files, and debris.
	if err := os.MkdirAll(filepath.Join(dir, "..2020_01_01_00_00_00.123"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("plain"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(dir)
	steps := []map[string]string{
		{"a": "1", "b": "2"},
		{"a": "3"},
		{},
		{"c": "4"},
	}
	for i, files := range steps {
		in := map[string][]byte{}
		for k, v := range files {
			in[k] = []byte(v)
		}
		if err := WriteFiles(dir, in, 0o600); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		// The dir a container would have bind-mounted is still the one.
		if after, _ := os.Stat(dir); !os.SameFile(before, after) {
			t.Fatalf("step %d: the dir was replaced", i)
		}
		if got := visibleFiles(t, dir); len(got) != len(files) {
			t.Errorf("step %d: files %v, want %v", i, got, files)
		}
		for k, v := range files {
			if data, _ := os.ReadFile(filepath.Join(dir, k)); string(data) != v {
				t.Errorf("step %d: %s = %q, want %q", i, k, data, v)
			}
		}
		// Only ..data and the data dir it names are left of the writer.
		entries, _ := os.ReadDir(dir)
		if hidden := len(entries) - len(files); hidden != 2 {
			t.Errorf("step %d: %d entries of the writer's, want 2: %v", i, hidden, entries)
		}
	}
}

func TestWriteFilesRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", ".", "..", "..data", "/abs", "a/../b", "a//b", "a/./b", "x\x00"} {
		err := WriteFiles(t.TempDir(), map[string][]byte{name: nil}, 0o644)
		if !errdefs.IsInvalid(err) {
			t.Errorf("%q: err = %v", name, err)
		}
	}
}

// TestWriteFilesNested: paths of several elements are files in
// directories through one top symlink; written again unchanged, nothing
// moves; changed, the new set replaces the old at once.
func TestWriteFilesNested(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{"conf/app.yaml": []byte("a: 1"), "conf/sub/x": []byte("x"), "top": []byte("t")}
	if err := WriteFiles(dir, files, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "conf", "sub", "x")); err != nil || string(got) != "x" {
		t.Fatalf("conf/sub/x: %q, %v", got, err)
	}
	if link, err := os.Readlink(filepath.Join(dir, "conf")); err != nil || link != filepath.Join(dataLink, "conf") {
		t.Errorf("conf is %q, %v; want a symlink through %s", link, err, dataLink)
	}
	before, _ := os.Readlink(filepath.Join(dir, dataLink))
	if err := WriteFiles(dir, files, 0o644); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Readlink(filepath.Join(dir, dataLink)); after != before {
		t.Errorf("unchanged files were written again (%s, then %s)", before, after)
	}
	delete(files, "conf/sub/x")
	files["conf/app.yaml"] = []byte("a: 2")
	if err := WriteFiles(dir, files, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "conf", "app.yaml")); string(got) != "a: 2" {
		t.Errorf("conf/app.yaml is %q after a change", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "conf", "sub")); !os.IsNotExist(err) {
		t.Errorf("conf/sub outlived its only file: %v", err)
	}
}
