package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	ctrd "github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/namespaces"

	"minik8s/pkg/containerd"
	"minik8s/test/containerdtest"
)

// A container whose record containerd lost while its create raced
// containerd's stop (runc init waiting under its shim) is killed and
// deleted by the drain, not left running.
func TestShutdownOrphanShimRemovesItsContainer(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportFunctionRuntime(t)
	ctx := namespaces.WithNamespace(context.Background(), containerd.Namespace)
	const id = "orphan"
	if err := ctd.Runtime.CreateContainer(ctx, containerd.ContainerSpec{ID: id, Image: containerdtest.PythonRuntimeImage,
		Command: []string{"sleep", "60"}}); err != nil {
		t.Fatal(err)
	}
	c, err := ctrd.New(ctd.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ct, err := c.LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := ct.NewTask(ctx, cio.NullIO) // created, never started
	if err != nil {
		t.Fatal(err)
	}
	pid := int(task.Pid())
	// The record goes; the task stays with its shim.
	if err := c.ContainerService().Delete(ctx, id); err != nil {
		t.Fatal(err)
	}

	bundle := filepath.Join(ctd.Dir, "state", "io.containerd.runtime.v2.task", containerd.Namespace, id)
	shutdownOrphanShim(ctx, bundle)

	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan's process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(runcRoot, containerd.Namespace, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("runc state of the orphan left: %v", err)
	}
	// The test's containerd, still running, sees the shim go and cleans up
	// after it (a `shim delete` of its own), then removes the bundle: wait
	// for that before its teardown looks for leftovers.
	for _, err := os.Stat(bundle); err == nil; _, err = os.Stat(bundle) {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("containerd kept the orphan's bundle %s", bundle)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
