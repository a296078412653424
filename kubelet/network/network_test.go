package network_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"minik8s/kubelet/network"
	"minik8s/pkg/netns"
	"minik8s/test/framework"
	"minik8s/test/harness"
)

// TestMain lets the framework sweep what a killed binary left (the
// namespaces are mounts under its run dir).
func TestMain(m *testing.M) { harness.Main(m) }

// The pod range of these tests, its network and its gateway address. They
// exist only in the node namespace nodeNetwork creates: the bridge, the
// veths and the pods' namespaces hang off it, and nothing routes out of it.
const (
	testPodCIDR = "10.42.7.0/24"
	// testClusterCIDR holds testPodCIDR: only fenced pods' rules name it.
	testClusterCIDR = "10.42.0.0/16"
	testPodNetwork  = "10.42.7.0"
	testPodGateway  = "10.42.7.1"
	// The host-local IPAM plugin's files, one per address it handed out.
	testPodLeases = "10.42.7.*"
)

// nodeNetwork is a manager whose node side lives in a namespace of the
// test's own, so that nothing is configured on the machine's network.
func nodeNetwork(t *testing.T) (m *network.Manager, node, state string) {
	t.Helper()
	if os.Geteuid() != 0 {
		harness.NeedE2E(t, "pod networks need root")
	}
	for _, need := range []string{filepath.Join(network.DefaultBinDir, "bridge"), "/usr/sbin/iptables"} {
		if _, err := os.Stat(need); err != nil {
			harness.NeedE2E(t, "pod networks need %s (apt-get install containernetworking-plugins iptables)", need)
		}
	}
	dir := t.TempDir()
	node, state = filepath.Join(dir, "node"), filepath.Join(dir, "state")
	if err := netns.New(node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netns.Remove(node) })
	m, err := network.New(network.Config{StateDir: state, PodCIDR: testPodCIDR, NodeNetns: node})
	if err != nil {
		t.Fatal(err)
	}
	return m, node, state
}

// hostHasNoPodRange fails the test when the machine's own namespace holds
// an address or a route of the pod range: it must exist only in the node
// namespace the test made.
func hostHasNoPodRange(t *testing.T) {
	t.Helper()
	_, pods, _ := net.ParseCIDR(testPodCIDR)
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && (pods.Contains(n.IP) || n.Contains(pods.IP)) {
			t.Errorf("the machine's namespace has address %s, of the test's pod range %s", n, testPodCIDR)
		}
	}
	// This thread's namespace: the machine's, as every thread's that
	// netns.Do did not take (not /proc/self/net, the main thread's: a
	// goroutine of netns.Do that ran there leaves it in a pod's namespace,
	// as Go never ends the main thread).
	runtime.LockOSThread()
	data, err := os.ReadFile("/proc/thread-self/net/route")
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		dst, mask := hexIPv4(f[1]), hexIPv4(f[7])
		if dst == nil || mask == nil || dst.Equal(net.IPv4zero) {
			continue // the default route is the machine's way out, not a pod route
		}
		route := &net.IPNet{IP: dst, Mask: net.IPMask(mask.To4())}
		if route.Contains(pods.IP) || pods.Contains(dst) {
			t.Errorf("the machine's namespace routes %s via %s, into the test's pod range %s", route, f[0], testPodCIDR)
		}
	}
}

// hexIPv4 reads an address of /proc/net/route (hex, host byte order).
func hexIPv4(h string) net.IP {
	var b [4]byte
	if _, err := fmt.Sscanf(h, "%02X%02X%02X%02X", &b[3], &b[2], &b[1], &b[0]); err != nil {
		return nil
	}
	return net.IPv4(b[0], b[1], b[2], b[3])
}

// echo serves one connection in the namespace at path on addr.
func echo(t *testing.T, path, addr string) {
	t.Helper()
	var l net.Listener
	if err := netns.Do(path, func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.Copy(c, c)
			c.Close()
		}
	}()
}

// talk says hello to addr from the namespace at path and wants it back.
func talk(t *testing.T, path, addr string) {
	t.Helper()
	var c net.Conn
	err := netns.Do(path, func() (err error) {
		c, err = net.DialTimeout("tcp", addr, 3*time.Second)
		return err
	})
	if err != nil {
		t.Fatalf("from %s to %s: %v", filepath.Base(path), addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("from %s to %s: %q %v", filepath.Base(path), addr, buf, err)
	}
}

// TestPodNetworks: each pod gets its namespace and an address of the
// node's slice; pods reach each other and the node reaches them; a pod's
// own localhost works; a restarted kubelet finds its pods as they were;
// tearing down leaves no namespace, veth or address.
func TestPodNetworks(t *testing.T) {
	ctx := context.Background()
	m, node, state := nodeNetwork(t)
	a, b := network.Pod{UID: "uid-a", Namespace: "default", Name: "a"}, network.Pod{UID: "uid-b", Namespace: "default", Name: "b"}
	pathA, ipA, err := m.SetUp(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	pathB, ipB, err := m.SetUp(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	_, slice, _ := net.ParseCIDR(testPodCIDR)
	for _, ip := range []string{ipA, ipB} {
		if !slice.Contains(net.ParseIP(ip)) || ip == testPodNetwork || ip == testPodGateway {
			t.Errorf("pod address %s is not a pod address of %s", ip, testPodCIDR)
		}
	}
	if ipA == ipB || pathA == pathB || !netns.Is(pathA) || !netns.Is(pathB) {
		t.Fatalf("pods a %s %s and b %s %s", pathA, ipA, pathB, ipB)
	}
	hostHasNoPodRange(t)
	// Both serve the same port, each at its own address.
	echo(t, pathA, ipA+":8080")
	echo(t, pathB, ipB+":8080")
	talk(t, pathA, ipB+":8080")
	talk(t, pathB, ipA+":8080")
	talk(t, node, ipA+":8080")
	// A pod's containers talk over its own localhost.
	echo(t, pathA, "127.0.0.1:9000")
	talk(t, pathA, "127.0.0.1:9000")
	if got := framework.NetnsLinks(t, node); !slices.Contains(got, network.DefaultBridge) || len(got) != 4 {
		t.Errorf("node links %v, want lo, the bridge and two veths", got)
	}

	// A kubelet that restarted: the same pods, the same addresses.
	again, err := network.New(network.Config{StateDir: state, PodCIDR: testPodCIDR, NodeNetns: node})
	if err != nil {
		t.Fatal(err)
	}
	if uids, err := again.Pods(); err != nil || !slices.Equal(uids, []string{"uid-a", "uid-b"}) {
		t.Fatalf("pods after a restart: %v %v", uids, err)
	}
	if path, ip, err := again.SetUp(ctx, a); err != nil || path != pathA || ip != ipA {
		t.Fatalf("set up again: %s %s %v, want %s %s", path, ip, err, pathA, ipA)
	}

	for _, p := range []network.Pod{a, b, a} { // the second tear down of a finds nothing
		if err := again.TearDown(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{pathA, pathB} {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("namespace %s left (%v)", path, err)
		}
	}
	if got := framework.NetnsLinks(t, node); len(got) != 2 {
		t.Errorf("node links after the tear downs %v, want lo and the bridge", got)
	}
	held, _ := filepath.Glob(filepath.Join(state, "ipam", "*", testPodLeases))
	if len(held) > 0 {
		t.Errorf("addresses still allocated: %v", held)
	}
	// The freed addresses are given again.
	if _, ip, err := again.SetUp(ctx, network.Pod{UID: "uid-c", Namespace: "default", Name: "c"}); err != nil || !slice.Contains(net.ParseIP(ip)) {
		t.Fatalf("a pod after the tear downs: %s %v", ip, err)
	}
	if err := again.TearDown(ctx, network.Pod{UID: "uid-c"}); err != nil {
		t.Fatal(err)
	}
	// A kubelet that died making a namespace left its file: set up anyway.
	d := network.Pod{UID: "uid-d", Namespace: "default", Name: "d"}
	if err := os.WriteFile(again.Path(d.UID), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if path, _, err := again.SetUp(ctx, d); err != nil || !netns.Is(path) {
		t.Fatalf("set up over a stale file: %s %v", path, err)
	}

	// minik8s up, stopping, releases whatever pods are left, from the
	// state dir alone (as on the node, whose side the plugins tear down).
	e := network.Pod{UID: "uid-e", Namespace: "default", Name: "e"}
	if _, _, err := again.SetUp(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := netns.Do(node, func() error { return network.ReleaseAll(ctx, state, "") }); err != nil {
		t.Fatal(err)
	}
	if uids, err := again.Pods(); err != nil || len(uids) != 0 {
		t.Errorf("pods after releasing all: %v %v", uids, err)
	}
	if held, _ := filepath.Glob(filepath.Join(state, "ipam", "*", testPodLeases)); len(held) > 0 {
		t.Errorf("addresses still allocated after releasing all: %v", held)
	}
	if got := framework.NetnsLinks(t, node); len(got) != 2 {
		t.Errorf("node links after releasing all %v, want lo and the bridge", got)
	}
	if err := network.ReleaseAll(ctx, t.TempDir(), ""); err != nil {
		t.Errorf("releasing a dir with no network: %v", err)
	}
}

// TestHostPorts: a pod's hostPort is published on the node's addresses by
// portmap (here the gateway, the node's only one in its namespace), from
// the node and from another pod; tearing the pod down removes its rules.
func TestHostPorts(t *testing.T) {
	ctx := context.Background()
	m, node, _ := nodeNetwork(t)
	a := network.Pod{UID: "uid-hp-a", Namespace: "default", Name: "a",
		Ports: []network.PortMapping{{HostPort: 18080, ContainerPort: 8080, Protocol: "TCP"}}}
	b := network.Pod{UID: "uid-hp-b", Namespace: "default", Name: "b"}
	pathA, ipA, err := m.SetUp(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	pathB, _, err := m.SetUp(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, pathA, ipA+":8080")
	gateway := m.Gateway().String()
	talk(t, node, gateway+":18080")
	talk(t, pathB, gateway+":18080")
	save := func() string {
		out, err := exec.Command("nsenter", "--net="+node, "iptables-save", "-t", "nat").Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if rules := save(); !strings.Contains(rules, "18080") {
		t.Fatalf("no rule for host port 18080:\n%s", rules)
	}
	for _, p := range []network.Pod{a, b} {
		if err := m.TearDown(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if rules := save(); strings.Contains(rules, "18080") || strings.Contains(rules, ipA) {
		t.Errorf("pod a's host port rules left after its tear down:\n%s", rules)
	}
}
