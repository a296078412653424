// Package containerdtest starts, for one test, a containerd private to it
// (its run dir is the harness's) with the project's images. It imports
// libraries only (pkg/, images/), so that a library's tests (pkg/containerd)
// may use it.
package containerdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"minik8s/images"
	"minik8s/pkg/containerd"

	"minik8s/test/harness"
)

// PythonRuntimeImage is the project's Python image, built from Debian
// packages and imported by ImportPythonRuntime.
const PythonRuntimeImage = images.PythonRuntimeName

// Containerd is a containerd daemon private to one test: its own root,
// state and socket in a dir of the binary's run dir. It never touches
// another containerd.
type Containerd struct {
	t       testing.TB
	Dir     string
	Address string
	// Runtime is a connection to it in the minik8s namespace.
	Runtime *containerd.Runtime

	daemon *containerd.Daemon
}

// ContainerdBinary is the Debian package's daemon.
const ContainerdBinary = containerd.Binary

// StartContainerd starts a private containerd and stops it, with every
// container it ran, when the test ends (or the binary is interrupted: see
// Main). Without containerd or runc the test is skipped, or failed when
// MINIK8S_E2E=1.
func StartContainerd(t testing.TB) *Containerd {
	t.Helper()
	harness.HoldIfAborting()
	if os.Geteuid() != 0 {
		harness.NeedE2E(t, "containerd tests need root")
	}
	if _, err := os.Stat(ContainerdBinary); err != nil {
		harness.NeedE2E(t, "containerd is not installed (%s): %v", ContainerdBinary, err)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		harness.NeedE2E(t, "runc is not installed: %v", err)
	}
	// In the run dir, which a later binary sweeps if this one is killed;
	// short, as unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp(harness.RunDir(), "ctd")
	if err != nil {
		t.Fatal(err)
	}
	c := &Containerd{t: t, Dir: dir, Address: filepath.Join(dir, "c.sock")}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	// SIGKILL to the daemon if this binary dies without its teardown; the
	// daemon's own process group keeps a Ctrl-C from reaching it before
	// the teardown has removed its containers.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.daemon, err = containerd.Start(ctx, dir, c.Address, logf, containerd.WithPdeathsig(syscall.SIGKILL))
	if err != nil {
		logf.Close()
		out := c.Log()
		harness.SweepDir(dir)
		t.Fatalf("%v\n%s", err, out)
	}
	harness.Track(t, "containerd "+dir, func(errorf func(string, ...any)) {
		c.stop(errorf)
		logf.Close()
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		rt, err := containerd.New(context.Background(), c.Address, containerd.Options{PullTimeout: 20 * time.Second})
		if err == nil {
			if _, err = rt.Version(context.Background()); err == nil {
				c.Runtime = rt
				return c
			}
			rt.Close()
		}
		if exited, err := c.daemon.Exited(); exited {
			t.Fatalf("containerd exited while starting: %v\n%s", err, c.Log())
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd at %s not answering after 30s: %v\n%s", c.Address, err, c.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DaemonPid is the pid of the containerd daemon.
func (c *Containerd) DaemonPid() int { return c.daemon.Pid() }

// Log is the daemon's output so far.
func (c *Containerd) Log() string {
	data, _ := os.ReadFile(filepath.Join(c.Dir, "containerd.log"))
	return string(data)
}

// ImportPythonRuntime makes sure minik8s/python-runtime:latest is in this
// containerd, building it first if this machine has not yet (a debootstrap
// of Debian's packages, cached for the next runs).
func (c *Containerd) ImportPythonRuntime(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if ok, err := c.Runtime.HasImage(ctx, PythonRuntimeImage); err == nil && ok {
		return
	}
	c.buildAndImport(ctx, t, PythonRuntimeImage, images.PythonRuntime())
}

// buildAndImport builds an image of Debian's packages (cached) and imports
// it; without debootstrap and no cache, the test needs what it cannot have.
func (c *Containerd) buildAndImport(ctx context.Context, t testing.TB, name string, spec images.Spec) {
	t.Helper()
	b := images.Builder{CacheDir: images.DefaultCacheDir}
	path, err := b.Build(ctx, spec)
	if errors.Is(err, images.ErrNoDebootstrap) {
		harness.NeedE2E(t, "building %s: %v", name, err)
	}
	if err != nil {
		t.Fatalf("building %s: %v", name, err)
	}
	if _, err := images.ImportFile(ctx, c.Runtime, path); err != nil {
		t.Fatalf("importing %s: %v", path, err)
	}
}

// stop removes every container of the daemon, stops it and removes its
// dir. A shim or runc container that outlives the removal of every
// container is a leak: it is killed, and reported.
func (c *Containerd) stop(errorf func(string, ...any)) {
	if c.Runtime != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := c.Runtime.ListContainers(ctx, nil)
		if err != nil {
			errorf("containerd cleanup: %v", err)
		}
		for _, ct := range cs {
			if err := c.Runtime.RemoveContainer(ctx, ct.ID); err != nil {
				errorf("containerd cleanup: %v", err)
			}
		}
		cancel()
		c.Runtime.Close()
	}
	// Whatever still runs on the daemon's socket survived the removal of
	// its containers: a leak that a real node would have too.
	leaked, err := harness.SweepRuncContainers(c.Dir)
	if shims := harness.ProcsReferring(c.Dir, c.daemon.Pid()); len(shims) > 0 {
		for _, p := range shims {
			leaked = append(leaked, fmt.Sprintf("process %d: %s", p.PID, p.Cmdline))
		}
		err = errors.Join(err, harness.KillProcs(shims))
	}
	for _, l := range leaked {
		errorf("containerd cleanup: left running after every container was removed: %s", l)
	}
	if err != nil {
		errorf("containerd cleanup: %v", err)
	}
	c.daemon.Stop()
	// The rest (processes, mounts) is not expected, but a dir is never
	// removed through a mount.
	for _, l := range harness.SweepDir(c.Dir) {
		if !strings.HasPrefix(l, "mount ") {
			errorf("containerd cleanup: %s", l)
		}
	}
}

// KillNode kills and removes every container of a node in this
// containerd, as the death of the node's machine would.
func (c *Containerd) KillNode(t testing.TB, node string) {
	t.Helper()
	ctx := context.Background()
	cs, err := c.Runtime.ListContainers(ctx, map[string]string{containerd.LabelNode: node})
	if err != nil {
		t.Fatalf("containers of %s: %v", node, err)
	}
	for _, ct := range cs {
		if err := c.Runtime.RemoveContainer(ctx, ct.ID); err != nil {
			t.Fatalf("killing container %s of %s: %v", ct.ID, node, err)
		}
	}
}
