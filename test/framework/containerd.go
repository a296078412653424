package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/images"
	"minik8s/kubelet"
	"minik8s/pkg/client"
	"minik8s/pkg/containerd"
	"minik8s/pkg/rbac"

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
// container it ran, when the test ends (or the binary is interrupted: see
// Main). Without containerd or runc the test is skipped, or failed when
// MINIK8S_E2E=1.
func StartContainerd(t testing.TB) *Containerd {
	t.Helper()
	harness.HoldIfAborting()
	if os.Geteuid() != 0 {
		NeedE2E(t, "containerd tests need root")
	}
	if _, err := os.Stat(ContainerdBinary); err != nil {
		NeedE2E(t, "containerd is not installed (%s): %v", ContainerdBinary, err)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		NeedE2E(t, "runc is not installed: %v", err)
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
		NeedE2E(t, "building %s: %v", name, err)
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

// Kubelet is a kubelet running in the test process.
type Kubelet struct {
	t      testing.TB
	Config kubelet.Config
	// mu keeps Start and Stop from racing an abnormal end's teardown.
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

// StartKubelet runs a kubelet for node name on ip (a loopback address such
// as 127.0.0.11) against the apiserver at apiURL and the containerd ctd,
// with short back-offs; it stops (leaving its containers) when the test
// ends. Its root dir lives in a temp dir kept across Restart.
func StartKubelet(t testing.TB, apiURL string, ctd *Containerd, name, ip string) *Kubelet {
	t.Helper()
	return startKubelet(t, apiURL, ctd, name, ip)
}

// SecureKubelet is StartKubelet for a node of the secure port of s with
// credentials issued from the cluster CA in s's data dir, as minik8s up
// issues its own node's: user system:node:NAME in system:nodes, and a
// serving certificate for ip. (A node joining with the node token is not
// given one for a loopback address such as ip: see TestJoinRejoinRenew and
// TestMinik8sUpBinaries for the join.)
func SecureKubelet(t testing.TB, s *APIServer, ctd *Containerd, name, ip string) *Kubelet {
	t.Helper()
	cc, err := apiserver.ClientConfigFor(s.DataDir, s.SecureURL, rbac.NodeUserPrefix+name, rbac.NodesGroup)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewForConfig(cc)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, ca, err := apiserver.KubeletServingFor(s.DataDir, name, net.ParseIP(ip))
	if err != nil {
		t.Fatal(err)
	}
	return startKubelet(t, s.SecureURL, ctd, name, ip, func(cfg *kubelet.Config) {
		cfg.Client, cfg.ServingCert, cfg.ServingKey, cfg.ClientCA, cfg.CAData = c, cert, key, ca, ca
	})
}

func startKubelet(t testing.TB, apiURL string, ctd *Containerd, name, ip string, configure ...func(*kubelet.Config)) *Kubelet {
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
		// In-process kubelets share the test's network: their pods run
		// on it (StartNetKubelet gives pods their own).
		PodNetwork:      kubelet.PodNetworkHost,
		ContainerLogger: GoBinary(t, kubelet.LoggerName),
		StatsPeriod:     time.Second,
	}}
	for _, c := range configure {
		c(&k.Config)
	}
	k.Start()
	harness.Track(t, "kubelet "+name, k.stop)
	return k
}

// Start runs the kubelet (again).
func (k *Kubelet) Start() {
	harness.HoldIfAborting()
	k.mu.Lock()
	defer k.mu.Unlock()
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
func (k *Kubelet) Stop() { k.stop(k.t.Errorf) }

func (k *Kubelet) stop(errorf func(string, ...any)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cancel == nil {
		return
	}
	k.cancel()
	select {
	case err := <-k.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			errorf("kubelet %s stopped with error: %v", k.Config.NodeName, err)
		}
	case <-time.After(60 * time.Second):
		errorf("kubelet %s did not stop within 60s", k.Config.NodeName)
	}
	k.cancel = nil
}

// Restart stops and starts the kubelet on the same root dir.
func (k *Kubelet) Restart() {
	k.Stop()
	k.Start()
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
