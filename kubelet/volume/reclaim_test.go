package volume

import (
	"os"
	"path/filepath"
	"testing"
)

// The deleter removes a provisioned directory of the storage dir and
// nothing else: not a path elsewhere, not through a symlink, not the
// storage dir itself; what a symlink inside leads to stays.
func TestRemoveClaimDir(t *testing.T) {
	root := t.TempDir()
	storage := filepath.Join(root, "storage")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{storage, outside, filepath.Join(storage, "nested")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "keep")
	if err := os.WriteFile(secret, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		p := filepath.Join(storage, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "sub", "data"), []byte("d"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withLink := mk("pvc-link_ns_a")
	if err := os.Symlink(outside, filepath.Join(withLink, "escape")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(storage, "pvc-symlink_ns_a")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(storage, "pvc-file_ns_a")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	outsidePVC := filepath.Join(outside, "pvc-x_ns_a")
	if err := os.MkdirAll(outsidePVC, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, storage, dir string
		ok, gone           bool
	}{
		{"its own", storage, mk("pvc-u1_ns_data"), true, true},
		{"with a symlink out inside", storage, withLink, true, true},
		{"already gone", storage, filepath.Join(storage, "pvc-gone_ns_a"), true, true},
		{"storage dir given unclean", storage + "/", mk("pvc-u2_ns_data"), true, true},
		{"a symlink", storage, link, false, false},
		{"a file", storage, file, false, false},
		{"elsewhere", storage, outsidePVC, false, false},
		{"dot-dot out", storage, storage + "/../outside/pvc-x_ns_a", false, false},
		{"nested", storage, mk("nested/pvc-n_ns_a"), false, false},
		{"not provisioner's name", storage, mk("data"), false, false},
		{"the storage dir", storage, storage, false, false},
		{"the root", storage, "/", false, false},
		{"relative", storage, "pvc-u3_ns_data", false, false},
		{"relative storage dir", "storage", filepath.Join(storage, "pvc-u4"), false, true},
	} {
		err := RemoveClaimDir(tc.storage, tc.dir)
		if (err == nil) != tc.ok {
			t.Errorf("%s: RemoveClaimDir(%s): %v, want ok %v", tc.name, tc.dir, err, tc.ok)
		}
		if _, serr := os.Lstat(tc.dir); os.IsNotExist(serr) != tc.gone && filepath.IsAbs(tc.dir) {
			t.Errorf("%s: %s gone: %v, want %v", tc.name, tc.dir, os.IsNotExist(serr), tc.gone)
		}
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("what a symlink led to was removed: %v", err)
	}
	if _, err := os.Stat(storage); err != nil {
		t.Errorf("the storage dir: %v", err)
	}
}
