package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRemoveAbortedCreate(t *testing.T) {
	tests := []struct {
		name string
		// stateJSON: runc finished creating the container.
		stateJSON bool
		// busy: a cgroup still holds something (here a file, as a
		// process would make rmdir fail).
		busy        bool
		wantRuncDir bool
		wantCgroups bool
	}{
		{name: "create cut short", wantRuncDir: false, wantCgroups: false},
		{name: "created", stateJSON: true, wantRuncDir: true, wantCgroups: true},
		{name: "cgroup not empty", busy: true, wantRuncDir: false, wantCgroups: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			runcRoot, cgroupRoot = filepath.Join(tmp, "runc"), filepath.Join(tmp, "cgroup")
			t.Cleanup(func() { runcRoot, cgroupRoot = "/run/containerd/runc", "/sys/fs/cgroup" })

			const id = "web-abcde-server-12345678"
			runDir := filepath.Join(runcRoot, "minik8s", id)
			mustMkdir(t, runDir)
			mustWrite(t, filepath.Join(runDir, "exec.fifo"))
			if tt.stateJSON {
				mustWrite(t, filepath.Join(runDir, "state.json"))
			}
			var cgroups []string
			for _, h := range []string{"memory", "pids"} {
				cg := filepath.Join(cgroupRoot, h, "minik8s", id)
				mustMkdir(t, cg)
				cgroups = append(cgroups, cg)
			}
			if tt.busy {
				for _, cg := range cgroups {
					mustWrite(t, filepath.Join(cg, "tasks"))
				}
			}
			// A container of another cluster in the same runc root.
			other := filepath.Join(runcRoot, "minik8s", "web-other-server-1")
			mustMkdir(t, other)

			removeAbortedCreate(taskBundle{ns: "minik8s", id: id, cgroupsPath: "/minik8s/" + id})

			if got := exists(runDir); got != tt.wantRuncDir {
				t.Errorf("runc state dir exists = %v, want %v", got, tt.wantRuncDir)
			}
			for _, cg := range cgroups {
				if got := exists(cg); got != tt.wantCgroups {
					t.Errorf("cgroup %s exists = %v, want %v", cg, got, tt.wantCgroups)
				}
			}
			if !exists(other) {
				t.Errorf("the state dir of another container was removed")
			}
			if !exists(filepath.Join(cgroupRoot, "memory", "minik8s")) {
				t.Errorf("the namespace's parent cgroup was removed")
			}
		})
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
