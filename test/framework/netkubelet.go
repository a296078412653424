package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"minik8s/pkg/netns"
)

// Forward serves target (an address of the machine's loopback, such as
// the apiserver's) on the node's own loopback: the node reaches it at the
// returned address, and nothing else of the machine becomes reachable.
func (n *NetNode) Forward(t testing.TB, target string) string {
	t.Helper()
	l, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer in.Close()
				out, err := net.DialTimeout("tcp", target, 5*time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				done := make(chan struct{})
				go func() { io.Copy(out, in); out.(*net.TCPConn).CloseWrite(); close(done) }()
				io.Copy(in, out)
				<-done
			}()
		}
	}()
	return l.Addr().String()
}

// NetKubelet is a kubelet process running in a simulated node's namespace,
// its pods networked through CNI.
type NetKubelet struct {
	t       testing.TB
	Node    *NetNode
	Name    string
	RootDir string
	LogPath string
	// APIAddr is where the kubelet reaches the apiserver: the node's own
	// loopback, forwarded to the apiserver's plain port.
	APIAddr string
	args    []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error
}

// StartNetKubelet runs bin/kubelet (built from cmd/kubelet) in node's
// namespace with --pod-network cni, against the apiserver s on the
// machine's loopback (forwarded into the node) and its service range, with
// ctd's containerd. It returns once the node has registered and been given
// its pod CIDR, so that pods bound to it are not taken for orphans.
func StartNetKubelet(t testing.TB, node *NetNode, s *APIServer, ctd *Containerd, name string) *NetKubelet {
	t.Helper()
	bin := goBinary(t, "kubelet")
	dir := t.TempDir()
	k := &NetKubelet{t: t, Node: node, Name: name, RootDir: filepath.Join(dir, "root"), LogPath: filepath.Join(dir, "kubelet.log"),
		APIAddr: node.Forward(t, s.Addr)}
	// nsenter enters only the network namespace: `ip netns exec` would
	// give the kubelet a mount namespace of its own too, and the pods'
	// namespaces it mounts would be out of containerd's sight.
	// The cluster DNS forwards no name anywhere: no nameserver.
	resolvConf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("# no nameserver: a test sends no query out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k.args = []string{"--net=" + node.Path(), bin, "--resolv-conf", resolvConf,
		"--apiserver", "http://" + k.APIAddr, "--service-cidr", s.ServiceCIDR,
		"--node-name", name, "--node-ip", node.IP, "--port", "0",
		"--containerd-address", ctd.Address, "--root-dir", k.RootDir,
		"--pod-network", "cni", "--heartbeat-period", "2s", "--restart-backoff", "1s", "--max-restart-backoff", "5s"}
	k.Start()
	t.Cleanup(func() {
		k.Kill()
		// Pods still running keep their namespaces, but not the mounts
		// that would keep the kubelet's root dir from being removed; their
		// containers go with the containerd, their veths with the node.
		entries, _ := os.ReadDir(filepath.Join(k.RootDir, "network", "netns"))
		for _, e := range entries {
			if err := netns.Remove(filepath.Join(k.RootDir, "network", "netns", e.Name())); err != nil {
				t.Errorf("kubelet %s: %v", name, err)
			}
		}
		if t.Failed() {
			data, _ := os.ReadFile(k.LogPath)
			lines := strings.Split(string(data), "\n")
			t.Logf("kubelet %s, last lines of its log:\n%s", name, strings.Join(lines[max(0, len(lines)-80):], "\n"))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := s.Client.Nodes().Get(context.Background(), name)
		if err == nil && n.Spec.PodCIDR != "" {
			return k
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubelet %s: its node has not registered with a pod CIDR in 60s (last error: %v)", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Start runs the kubelet (again, after Kill).
func (k *NetKubelet) Start() {
	k.t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd != nil {
		k.t.Fatalf("kubelet %s already runs", k.Name)
	}
	logf, err := os.OpenFile(k.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		k.t.Fatal(err)
	}
	cmd := exec.Command("nsenter", k.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// nsenter execs the kubelet in place: it dies with the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started, done := make(chan error, 1), make(chan error, 1)
	go func() {
		// The parent death signal fires when the thread that forked the
		// kubelet exits, as locked threads of NetNode.Do do: this one is
		// kept, locked, for the kubelet's life (as pkg/containerd does).
		runtime.LockOSThread()
		defer logf.Close()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		k.t.Fatalf("starting kubelet %s: %v", k.Name, err)
	}
	k.cmd, k.done = cmd, done
}

// Kill kills the kubelet as a crash would: its containers keep running.
func (k *NetKubelet) Kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil {
		return
	}
	_ = k.cmd.Process.Kill()
	err := <-k.done
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		k.t.Errorf("kubelet %s: %v", k.Name, err)
	}
	k.cmd = nil
}

// Links are the network devices of the node's namespace.
func (n *NetNode) Links(t testing.TB) []string { return NetnsLinks(t, n.Path()) }

// NetnsLinks are the network devices of the namespace kept at path.
func NetnsLinks(t testing.TB, path string) []string {
	t.Helper()
	out, err := exec.Command("nsenter", "--net="+path, "ip", "-o", "link", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip link in %s: %v: %s", path, err, out)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			names = append(names, strings.Split(strings.TrimSuffix(f[1], ":"), "@")[0])
		}
	}
	return names
}

func (k *NetKubelet) String() string { return fmt.Sprintf("kubelet %s in %s", k.Name, k.Node.Name) }
