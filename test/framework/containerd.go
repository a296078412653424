package framework

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"minik8s/images"
	"minik8s/kubelet"
	"minik8s/kubelet/runtime"
	"minik8s/pkg/containerd"
)

// PythonRuntimeImage is the project's Python image, built from Debian
// packages and imported by ImportPythonRuntime.
const PythonRuntimeImage = images.PythonRuntimeName

// Containerd is a containerd daemon private to one test: its own root,
// state and socket in a temp dir. It never touches another containerd.
type Containerd struct {
	t       testing.TB
	Dir     string
	Address string
	// Runtime is a connection to it in the minik8s namespace.
	Runtime *runtime.Runtime

	cmd  *exec.Cmd
	done chan error
}

// NeedE2E fails the test when MINIK8S_E2E=1 (the suite must run in full)
// and skips it otherwise.
func NeedE2E(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("MINIK8S_E2E") == "1" {
		t.Fatalf("MINIK8S_E2E=1 but "+format, args...)
	}
	t.Skipf(format, args...)
}

// ContainerdBinary is the Debian package's daemon.
const ContainerdBinary = containerd.Binary

// StartContainerd starts a private containerd and stops it, with every
// container it ran, when the test ends. Without containerd or runc the
// test is skipped, or failed when MINIK8S_E2E=1.
func StartContainerd(t testing.TB) *Containerd {
	t.Helper()
	if os.Geteuid() != 0 {
		NeedE2E(t, "containerd tests need root")
	}
	if _, err := os.Stat(ContainerdBinary); err != nil {
		NeedE2E(t, "containerd is not installed (%s): %v", ContainerdBinary, err)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		NeedE2E(t, "runc is not installed: %v", err)
	}
	// A short path: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("/tmp", "ctd")
	if err != nil {
		t.Fatal(err)
	}
	c := &Containerd{t: t, Dir: dir, Address: filepath.Join(dir, "c.sock")}
	config := containerd.Config(dir, c.Address)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(ContainerdBinary, "--config", cfgPath)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	// Its own process group, so that a Ctrl-C of the test run does not
	// kill it before the cleanup has removed its containers.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting containerd: %v", err)
	}
	c.done = make(chan error, 1)
	go func() { c.done <- c.cmd.Wait(); logf.Close() }()
	t.Cleanup(c.stop)

	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(c.Address); err == nil {
			rt, err := runtime.New(context.Background(), c.Address, runtime.Options{PullTimeout: 20 * time.Second})
			if err == nil {
				if _, err = rt.Version(context.Background()); err == nil {
					c.Runtime = rt
					return c
				}
				rt.Close()
			}
		}
		select {
		case err := <-c.done:
			c.done <- err
			t.Fatalf("containerd exited while starting: %v\n%s", err, c.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("containerd at %s not ready after 30s\n%s", c.Address, c.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

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
	b := images.Builder{CacheDir: images.DefaultCacheDir}
	path, err := b.Build(ctx, images.PythonRuntime())
	if errors.Is(err, images.ErrNoDebootstrap) {
		NeedE2E(t, "building %s: %v", PythonRuntimeImage, err)
	}
	if err != nil {
		t.Fatalf("building %s: %v", PythonRuntimeImage, err)
	}
	if _, err := images.ImportFile(ctx, c.Runtime, path); err != nil {
		t.Fatalf("importing %s: %v", path, err)
	}
}

// stop removes every container of the daemon, stops it and removes its dir.
func (c *Containerd) stop() {
	t := c.t
	if c.Runtime != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cs, err := c.Runtime.ListContainers(ctx, nil)
		if err != nil {
			t.Errorf("containerd cleanup: %v", err)
		}
		for _, ct := range cs {
			if err := c.Runtime.RemoveContainer(ctx, ct.ID); err != nil {
				t.Errorf("containerd cleanup: %v", err)
			}
		}
		cancel()
		c.Runtime.Close()
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	// Never delete through a mount that is still there.
	if left := mountsUnder(c.Dir); len(left) > 0 {
		for _, m := range left {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		if left := mountsUnder(c.Dir); len(left) > 0 {
			t.Errorf("containerd cleanup: mounts left under %s: %v", c.Dir, left)
			return
		}
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		t.Errorf("containerd cleanup: %v", err)
	}
}

// mountsUnder lists mount points below dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			out = append(out, fields[4])
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Kubelet is a kubelet running in the test process.
type Kubelet struct {
	t      testing.TB
	Config kubelet.Config
	cancel context.CancelFunc
	done   chan error
}

// StartKubelet runs a kubelet for node name on ip (a loopback address such
// as 127.0.0.11) against the apiserver at apiURL and the containerd ctd,
// with short back-offs; it stops (leaving its containers) when the test
// ends. Its root dir lives in a temp dir kept across Restart.
func StartKubelet(t testing.TB, apiURL string, ctd *Containerd, name, ip string) *Kubelet {
	t.Helper()
	k := &Kubelet{t: t, Config: kubelet.Config{
		APIServer:         apiURL,
		NodeName:          name,
		NodeIP:            ip,
		ContainerdAddress: ctd.Address,
		RootDir:           filepath.Join(t.TempDir(), "kubelet"),
		HeartbeatPeriod:   2 * time.Second,
		BackoffBase:       time.Second,
		BackoffMax:        5 * time.Second,
		PullTimeout:       20 * time.Second,
	}}
	k.Start()
	t.Cleanup(k.Stop)
	return k
}

// Start runs the kubelet (again).
func (k *Kubelet) Start() {
	if k.cancel != nil {
		k.t.Fatalf("kubelet %s already running", k.Config.NodeName)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	k.done = make(chan error, 1)
	cfg := k.Config
	go func() { k.done <- kubelet.Run(ctx, cfg) }()
}

// Stop stops the kubelet as a kill would: its containers keep running.
func (k *Kubelet) Stop() {
	if k.cancel == nil {
		return
	}
	k.cancel()
	select {
	case err := <-k.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			k.t.Errorf("kubelet %s stopped with error: %v", k.Config.NodeName, err)
		}
	case <-time.After(60 * time.Second):
		k.t.Errorf("kubelet %s did not stop within 60s", k.Config.NodeName)
	}
	k.cancel = nil
}

// Restart stops and starts the kubelet on the same root dir.
func (k *Kubelet) Restart() {
	k.Stop()
	k.Start()
}
