package containerd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/containerd"
	"minik8s/test/containerdtest"
)

// shimsOf lists the pids of containerd shims serving container id.
func shimsOf(id string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if len(args) == 0 || !strings.Contains(args[0], "containerd-shim") {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-id" && args[i+1] == id {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// TestRemoveContainerCancelledMidwayLeavesNoShim cancels RemoveContainer
// at points spread over its run (a kubelet stopping while a pod
// terminates), then removes what is left as the next kubelet (or the
// test harness) would: no shim may survive. A removal that containerd
// abandoned half-way forgot the task and left its shim running for good.
func TestRemoveContainerCancelledMidwayLeavesNoShim(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	rt := ctd.Runtime
	dir := t.TempDir()
	start := func(id string) {
		t.Helper()
		ctx := context.Background()
		if err := rt.CreateContainer(ctx, containerd.ContainerSpec{ID: id, Image: containerdtest.PythonRuntimeImage,
			Command: []string{"python3", "-c", "import time; time.sleep(600)"}}); err != nil {
			t.Fatal(err)
		}
		if err := rt.StartContainer(ctx, id, filepath.Join(dir, id+".log")); err != nil {
			t.Fatal(err)
		}
		// Stopped first, as a terminating pod's are: what is left to cut
		// short is the deletion itself.
		if err := rt.StopContainer(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
	}
	// How long a whole removal takes here: the cancellations land within it.
	start("measure")
	t0 := time.Now()
	if err := rt.RemoveContainer(context.Background(), "measure"); err != nil {
		t.Fatal(err)
	}
	full := time.Since(t0)
	const steps = 24
	for i := 0; i < steps; i++ {
		id := fmt.Sprintf("cancel-%d", i)
		start(id)
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(full*time.Duration(i)/steps, cancel)
		_ = rt.RemoveContainer(ctx, id) // cancelled or not: both are fine
		timer.Stop()
		cancel()
		// What a kubelet that comes back does with the leftovers.
		if err := rt.RemoveContainer(context.Background(), id); err != nil {
			t.Errorf("removing %s again: %v", id, err)
		}
		var shims []string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if shims = shimsOf(id); len(shims) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(shims) > 0 {
			t.Errorf("%s removed (cancelled after %v of %v), but its shim still runs: pid %v", id, full*time.Duration(i)/steps, full, shims)
		}
	}
}
