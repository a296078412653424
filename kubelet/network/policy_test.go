package network_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"minik8s/kubelet/network"
	"minik8s/pkg/netns"
	"minik8s/pkg/netpol"
)

// refused wants a connection from the namespace at path to addr refused
// at once, as a policy's end refuses it.
func refused(t *testing.T, path, addr, what string) {
	t.Helper()
	start := time.Now()
	err := dial(path, "", addr)
	if err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("%s to %s: %v after %v, want refused at once", what, addr, err, time.Since(start))
	}
}

// TestPolicies: what SetPolicies gives a pod is enforced in its namespace:
// an isolated pod takes new connections from its allowed peers and its
// node only, makes only those allowed, keeps its fence when fenced, gets
// the rules known of it when set up, and is open again once no policy
// selects it.
func TestPolicies(t *testing.T) {
	ctx := context.Background()
	_, node, state := nodeNetwork(t)
	m, err := network.New(network.Config{StateDir: state, PodCIDR: testPodCIDR, ClusterCIDR: testClusterCIDR, NodeNetns: node})
	if err != nil {
		t.Fatal(err)
	}
	setUp := func(p network.Pod) (string, string) {
		t.Helper()
		path, ip, err := m.SetUp(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.TearDown(context.Background(), p) })
		return path, ip
	}
	pathT, ipT := setUp(network.Pod{UID: "uid-target", Namespace: "a", Name: "target"})
	pathS, ipS := setUp(network.Pod{UID: "uid-same", Namespace: "a", Name: "same"})
	pathO, ipO := setUp(network.Pod{UID: "uid-other", Namespace: "b", Name: "other"})
	pathF, ipF := setUp(network.Pod{UID: "uid-fn", Namespace: "a", Name: "fn", Fenced: true})
	for _, a := range []string{net.JoinHostPort(ipT, "8080"), net.JoinHostPort(ipO, "8080"), net.JoinHostPort(ipO, "9999"), net.JoinHostPort(ipF, "8080"), net.JoinHostPort(ipT, "7070")} {
		path := map[string]string{ipT: pathT, ipO: pathO, ipF: pathF}[strings.Split(a, ":")[0]]
		echo(t, path, a)
	}
	target := net.JoinHostPort(ipT, "8080")

	set := func(rules map[string]netpol.Rules) {
		t.Helper()
		if err := m.SetPolicies(ctx, rules); err != nil {
			t.Fatal(err)
		}
	}
	set(map[string]netpol.Rules{"uid-target": {IngressIsolated: true, Ingress: []netpol.Allow{{CIDR: ipS + "/32", Protocol: "TCP", Port: 7070, EndPort: 8080}}}})
	t.Run("ingress", func(t *testing.T) {
		talk(t, pathS, target)
		talk(t, node, target) // the node: probes
		refused(t, pathO, target, "another namespace's pod")
		talk(t, pathT, net.JoinHostPort(ipO, "8080")) // egress is not isolated
	})

	// An established connection outlives the policy that allowed it (on
	// a port of its own: echo serves one connection at a time).
	var kept net.Conn
	if err := netns.Do(pathS, func() (err error) {
		kept, err = net.DialTimeout("tcp", net.JoinHostPort(ipT, "7070"), 3*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	set(map[string]netpol.Rules{"uid-target": {EgressIsolated: true, Egress: []netpol.Allow{{CIDR: ipO + "/32", Protocol: "TCP", Port: 9999}}}})
	t.Run("egress", func(t *testing.T) {
		talk(t, pathT, net.JoinHostPort(ipO, "9999"))
		refused(t, pathT, net.JoinHostPort(ipO, "8080"), "a port not allowed")
		talk(t, pathO, target) // ingress is open again
	})
	set(map[string]netpol.Rules{"uid-target": {IngressIsolated: true}})
	t.Run("established", func(t *testing.T) {
		kept.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := kept.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2)
		if _, err := kept.Read(buf); err != nil {
			t.Errorf("an established connection after deny-all: %v", err)
		}
		refused(t, pathS, target, "a new one")
	})

	set(map[string]netpol.Rules{"uid-fn": {IngressIsolated: true, Ingress: []netpol.Allow{{CIDR: "0.0.0.0/0"}}},
		"uid-late": {IngressIsolated: true}})
	t.Run("fenced", func(t *testing.T) {
		refused(t, pathS, net.JoinHostPort(ipF, "8080"), "the fence, with a policy allowing all")
		talk(t, node, net.JoinHostPort(ipF, "8080"))
	})
	t.Run("set up after its policy", func(t *testing.T) {
		pathL, ipL := setUp(network.Pod{UID: "uid-late", Namespace: "a", Name: "late"})
		echo(t, pathL, net.JoinHostPort(ipL, "8080"))
		refused(t, pathS, net.JoinHostPort(ipL, "8080"), "a pod of a deny-all policy")
	})

	// A restarted kubelet keeps a pod's rules until its first pass over
	// the policies, which writes them all, those of policies gone too.
	t.Run("a restarted kubelet", func(t *testing.T) {
		set(map[string]netpol.Rules{"uid-target": {IngressIsolated: true}})
		again, err := network.New(network.Config{StateDir: state, PodCIDR: testPodCIDR, ClusterCIDR: testClusterCIDR, NodeNetns: node})
		if err != nil {
			t.Fatal(err)
		}
		if path, _, err := again.SetUp(ctx, network.Pod{UID: "uid-target", Namespace: "a", Name: "target"}); err != nil || path != pathT {
			t.Fatalf("set up again: %s %v", path, err)
		}
		refused(t, pathO, target, "before the first pass")
		if err := again.SetPolicies(ctx, map[string]netpol.Rules{"uid-target": {}}); err != nil {
			t.Fatal(err)
		}
		talk(t, pathO, target)
	})

	set(nil)
	t.Run("no policy", func(t *testing.T) {
		talk(t, pathO, target)
		talk(t, pathS, target)
		refused(t, pathS, net.JoinHostPort(ipF, "8080"), "the fence alone")
	})
}
