package volume

import (
	"os"
	"path/filepath"
	"testing"

	"minik8s/pkg/errdefs"
	"minik8s/test/harness"
)

// A subPath mounts a part of a volume, a file or a directory (made when it
// is not there), through the volume's own symlinks (a ConfigMap's keys
// are some); a symlink a container put in the volume never leads the
// mount out of it.
func TestBindSubPath(t *testing.T) {
	if os.Geteuid() != 0 {
		harness.NeedE2E(t, "bind mounts need root")
	}
	podDir := t.TempDir()
	base := filepath.Join(podDir, "volumes", "empty-dir", "v")
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(base, "..data", "conf"), 0o755))
	must(os.WriteFile(filepath.Join(base, "..data", "conf", "app.ini"), []byte("ini"), 0o644))
	must(os.Symlink("..data/conf", filepath.Join(base, "conf")))      // inside: allowed
	must(os.Symlink(outside, filepath.Join(base, "escape")))          // out: refused
	must(os.Symlink("../../../../..", filepath.Join(base, "updots"))) // out: refused
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o600))
	t.Cleanup(func() {
		if err := RemovePodDir(podDir); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
			t.Errorf("removing the pod dir reached outside it: %v", err)
		}
	})

	for i, tc := range []struct {
		sub      string
		wantFile string // a file's content, or "" for a directory
		err      func(error) bool
	}{
		{sub: "conf/app.ini", wantFile: "ini"},
		{sub: "conf"},
		{sub: "new/deeper"},
		{sub: "escape", err: errdefs.IsInvalid},
		{sub: "escape/secret", err: errdefs.IsInvalid},
		{sub: "updots/etc", err: errdefs.IsInvalid},
		{sub: "../x", err: errdefs.IsInvalid},
		{sub: "/etc", err: errdefs.IsInvalid},
		{sub: "escape/made", err: errdefs.IsInvalid},
	} {
		target, err := BindSubPath(podDir, "v", "c", i, base, tc.sub)
		if tc.err != nil {
			if !tc.err(err) {
				t.Errorf("%s: %v, want refused", tc.sub, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.sub, err)
			continue
		}
		if tc.wantFile != "" {
			if data, err := os.ReadFile(target); err != nil || string(data) != tc.wantFile {
				t.Errorf("%s: %q, %v", tc.sub, data, err)
			}
			continue
		}
		// A directory: what is written there lands in the volume.
		must(os.WriteFile(filepath.Join(target, "w"), []byte("x"), 0o644))
		if _, err := os.Stat(filepath.Join(base, tc.sub, "w")); err != nil {
			t.Errorf("%s: a write through the mount is not in the volume: %v", tc.sub, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "made")); err == nil {
		t.Error("a subPath made a directory outside the volume")
	}
	// Bound again (a restarted container), the mount is replaced, not stacked.
	if _, err := BindSubPath(podDir, "v", "c", 0, base, "conf/app.ini"); err != nil {
		t.Fatal(err)
	}
}
