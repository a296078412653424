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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/kubelet"
	"minik8s/pkg/netns"
	"minik8s/pkg/subprocess"

	"minik8s/test/containerdtest"
	"minik8s/test/harness"
)

// Forward serves target (an address of the machine's loopback, such as
// the apiserver's) on the node's own loopback: the node reaches it at the
// returned address, and nothing else of the machine becomes reachable.
func (n *NetNode) Forward(t testing.TB, target string) string {
	t.Helper()
	return n.ForwardAt(t, "127.0.0.1:0", target)
}

// ForwardAt is Forward on address, an address of the node's namespace:
// its own on the underlay serves target to the node's pods and to other
// nodes as if it ran on the node.
func (n *NetNode) ForwardAt(t testing.TB, address, target string) string {
	t.Helper()
	l, err := n.Listen("tcp", address)
	if err != nil {
		t.Fatal(err)
	}
	relay(t, l, func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", target)
	})
	return l.Addr().String()
}

// Expose serves target, an address inside the node's namespace (its own
// loopback, say), on the machine's loopback, at the returned address: how
// the test and the apiserver reach a component run in the node.
func (n *NetNode) Expose(t testing.TB, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	relay(t, l, func(ctx context.Context) (net.Conn, error) { return n.DialContext(ctx, "tcp", target) })
	return l.Addr().String()
}

// relay copies every connection accepted on l to one dialed anew, both
// ways, until the test ends.
func relay(t testing.TB, l net.Listener, dial func(context.Context) (net.Conn, error)) {
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
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				out, err := dial(ctx)
				cancel()
				if err != nil {
					return
				}
				// Either side ending ends both: a watch stream whose
				// client died would otherwise hold the relay open.
				done := make(chan struct{}, 2)
				go func() { io.Copy(out, in); done <- struct{}{} }()
				go func() { io.Copy(in, out); done <- struct{}{} }()
				<-done
				out.Close()
				in.Close()
				<-done
			}()
		}
	}()
}

// NetKubelet is a kubelet process running in a simulated node's namespace,
// its pods networked through CNI.
type NetKubelet struct {
	*netProcess
	Node    *NetNode
	Name    string
	RootDir string
	// APIAddr is where the kubelet reaches the apiserver: the node's own
	// loopback, forwarded to the apiserver's plain port ("" for a kubelet
	// that joined the secure port).
	APIAddr string
}

// netProcess is a component's process run in a node's namespace (by
// nsenter, which enters only the network namespace: `ip netns exec` would
// give it a mount namespace of its own too, and the pods' namespaces a
// kubelet mounts would be out of containerd's sight).
type netProcess struct {
	t       testing.TB
	what    string // "kubelet NAME", in messages
	LogPath string
	args    []string
	// env is added to the test's environment.
	env []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan error
}

// StartNetKubelet runs bin/kubelet (built from cmd/kubelet) in node's
// namespace with --pod-network cni, against the apiserver s on the
// machine's loopback (forwarded into the node) and its service range, with
// ctd's containerd. It returns once the node has registered and been given
// its pod CIDR, so that pods bound to it are not taken for orphans.
func StartNetKubelet(t testing.TB, node *NetNode, s *APIServer, ctd *containerdtest.Containerd, name string) *NetKubelet {
	t.Helper()
	return startNetKubelet(t, node, s, ctd, name, "")
}

// StartJoinedNetKubelet is StartNetKubelet for a node that joins the
// secure port of s at server (as the node reaches it, AdvertisedURL) with
// the node token, as `minik8s join` does: it gets a client certificate of
// its own, whose kubeconfig is Kubeconfig(), and a serving certificate for
// its address, and it is what the node authorizer and restriction judge.
func StartJoinedNetKubelet(t testing.TB, node *NetNode, s *APIServer, ctd *containerdtest.Containerd, name, server string) *NetKubelet {
	t.Helper()
	return startNetKubelet(t, node, s, ctd, name, server)
}

// Kubeconfig is the path of the credentials a joined kubelet got.
func (k *NetKubelet) Kubeconfig() string { return filepath.Join(k.RootDir, kubelet.KubeconfigFile) }

// startNetKubelet starts a kubelet on the plain port of s, or, when
// server is set, joining the secure port there with the node token.
func startNetKubelet(t testing.TB, node *NetNode, s *APIServer, ctd *containerdtest.Containerd, name, server string) *NetKubelet {
	t.Helper()
	bin := harness.GoBinary(t, "kubelet")
	dir := t.TempDir()
	k := &NetKubelet{Node: node, Name: name, RootDir: filepath.Join(dir, "root"),
		netProcess: &netProcess{t: t, what: "kubelet " + name, LogPath: filepath.Join(dir, "kubelet.log")}}
	apiURL := server
	if server == "" {
		k.APIAddr = node.Forward(t, s.Addr)
		apiURL = "http://" + k.APIAddr
	} else {
		token, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.NodeTokenFile))
		if err != nil {
			t.Fatal(err)
		}
		// In the environment: a token on the command line is anyone's to read.
		k.env = []string{"MINIK8S_TOKEN=" + strings.TrimSpace(string(token))}
	}
	// The cluster DNS forwards no name anywhere: no nameserver.
	resolvConf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("# no nameserver: a test sends no query out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k.args = []string{"--net=" + node.Path(), bin, "--resolv-conf", resolvConf,
		"--apiserver", apiURL, "--service-cidr", s.ServiceCIDR,
		"--node-name", name, "--node-ip", node.IP, "--port", "0",
		"--containerd-address", ctd.Address, "--root-dir", k.RootDir, "--container-logger", harness.GoBinary(t, kubelet.LoggerName),
		"--pod-network", "cni", "--heartbeat-period", "2s", "--restart-backoff", "1s", "--max-restart-backoff", "5s"}
	k.Start()
	t.Cleanup(func() {
		k.Stop()
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
			k.logTail()
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

// Start runs the process (again, after Kill).
func (p *netProcess) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.t.Fatalf("%s already runs", p.what)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command("nsenter", p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	// nsenter execs the component in place: it dies with the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The parent death signal fires when the thread that forked the process
	// exits, as locked threads of NetNode.Do do: subprocess forks from a
	// thread kept for the process's life.
	wait, err := subprocess.Start(cmd)
	if err != nil {
		logf.Close()
		p.t.Fatalf("starting %s: %v", p.what, err)
	}
	done := make(chan error, 1)
	go func() {
		err := wait()
		logf.Close()
		done <- err
	}()
	p.cmd, p.done = cmd, done
}

// Kill kills the process as a crash would (a kubelet's containers keep
// running).
func (p *netProcess) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	err := <-p.done
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.t.Errorf("%s: %v", p.what, err)
	}
	p.cmd = nil
}

// Stop ends the process as a shutdown does (SIGTERM), and kills it if it
// has not ended within stopGrace: a kubelet then finishes the container
// creations under way, which a kill would cut (containerd 1.6 leaves a
// runc container behind a create cut short).
func (p *netProcess) Stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		p.mu.Lock()
		p.cmd = nil
		p.mu.Unlock()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.t.Errorf("%s: %v", p.what, err)
		}
	case <-time.After(stopGrace):
		p.Kill()
	}
}

// stopGrace bounds a component's shutdown at a test's end.
const stopGrace = 20 * time.Second

// logTail logs the last lines of the process's log.
func (p *netProcess) logTail() {
	data, _ := os.ReadFile(p.LogPath)
	lines := strings.Split(string(data), "\n")
	p.t.Logf("%s, last lines of its log:\n%s", p.what, strings.Join(lines[max(0, len(lines)-80):], "\n"))
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
