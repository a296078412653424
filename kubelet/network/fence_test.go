package network_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"minik8s/kubelet/network"
	"minik8s/pkg/netns"
)

func TestMasqueradeAddress(t *testing.T) {
	// Computed only, on documentation and benchmarking ranges: no address
	// here is given to anything, and none is a private-range address.
	for _, tc := range []struct{ cidr, want string }{
		{"192.0.2.0/24", "192.0.2.254"},
		{"198.18.0.0/16", "198.18.255.254"},
		{"192.0.2.8/29", "192.0.2.14"},
		{"192.0.2.0/30", ""},
		{"fd00::/64", ""},
		{"nonsense", ""},
	} {
		ip, err := network.MasqueradeAddress(tc.cidr)
		if got := ip.String(); tc.want == "" && err == nil || tc.want != "" && (err != nil || got != tc.want) {
			t.Errorf("MasqueradeAddress(%s) = %s, %v; want %q", tc.cidr, got, err, tc.want)
		}
	}
}

// dial connects to addr from the namespace at path, from local when set.
func dial(path, local, addr string) error {
	return netns.Do(path, func() error {
		d := net.Dialer{Timeout: 3 * time.Second}
		if local != "" {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
		}
		c, err := d.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// TestFencedPods: a fenced pod (a function's) is reached on every port it
// serves from its node (at the gateway) and from outside the pod range
// (another node), and refused at once from another pod and from the
// node's masquerade address (what a node forwards under its own name); it
// still reaches other pods itself. IPv6 is off on its interface. The
// fence is made again by a restarted kubelet, and goes with the pod.
// Another pod is not fenced, and no pod gets the masquerade address.
func TestFencedPods(t *testing.T) {
	ctx := context.Background()
	_, node, state := nodeNetwork(t)
	m, err := network.New(network.Config{StateDir: state, PodCIDR: testPodCIDR, ClusterCIDR: testClusterCIDR, NodeNetns: node})
	if err != nil {
		t.Fatal(err)
	}
	fn := network.Pod{UID: "uid-fn", Namespace: "a", Name: "fn", Fenced: true}
	plain := network.Pod{UID: "uid-plain", Namespace: "b", Name: "plain"}
	pathF, ipF, err := m.SetUp(ctx, fn)
	if err != nil {
		t.Fatal(err)
	}
	pathP, ipP, err := m.SetUp(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	masq, _ := network.MasqueradeAddress(testPodCIDR)
	// Another node's address (a benchmarking range, RFC 2544), on the
	// node's loopback inside the test's own namespace: its replies leave
	// by the node's pods' default route, as to another node.
	if out, err := exec.Command("nsenter", "--net="+node, "ip", "addr", "add", "198.18.0.2/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, port := range []string{"8080", "9999"} {
		echo(t, pathF, net.JoinHostPort(ipF, port))
	}
	echo(t, pathP, net.JoinHostPort(ipP, "8080"))

	checkFence := func(t *testing.T) {
		t.Helper()
		for _, port := range []string{"8080", "9999"} {
			to := net.JoinHostPort(ipF, port)
			talk(t, node, to)
			if err := dial(node, "198.18.0.2", to); err != nil {
				t.Errorf("from outside the pod range to %s: %v", to, err)
			}
			for _, from := range []struct{ path, local, what string }{{pathP, "", "another pod"}, {node, masq.String(), "the masquerade address"}} {
				start := time.Now()
				err := dial(from.path, from.local, to)
				if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > 2*time.Second {
					t.Errorf("from %s to %s: %v after %v, want refused at once", from.what, to, err, time.Since(start))
				}
			}
		}
		// The fenced pod reaches others; they are not fenced.
		talk(t, pathF, net.JoinHostPort(ipP, "8080"))
		talk(t, node, net.JoinHostPort(ipP, "8080"))
		if err := dial(node, masq.String(), net.JoinHostPort(ipP, "8080")); err != nil {
			t.Errorf("from the masquerade address to a pod that is not fenced: %v", err)
		}
		for path, want := range map[string]string{pathF: "1", pathP: "0"} {
			out, err := exec.Command("nsenter", "--net="+path, "cat", "/proc/sys/net/ipv6/conf/eth0/disable_ipv6").Output()
			if err == nil && strings.TrimSpace(string(out)) != want {
				t.Errorf("disable_ipv6 of %s's eth0 is %s, want %s", filepath.Base(path), out, want)
			}
		}
	}
	t.Run("fenced", checkFence)

	// A kubelet that restarts sets the fence up again, even on a pod set
	// up without one.
	if out, err := exec.Command("nsenter", "--net="+pathF, "iptables", "-F").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	again, err := network.New(network.Config{StateDir: state, PodCIDR: testPodCIDR, ClusterCIDR: testClusterCIDR, NodeNetns: node})
	if err != nil {
		t.Fatal(err)
	}
	if path, ip, err := again.SetUp(ctx, fn); err != nil || path != pathF || ip != ipF {
		t.Fatalf("set up again: %s %s %v", path, ip, err)
	}
	t.Run("after a kubelet restart", checkFence)

	for _, p := range []network.Pod{fn, plain} {
		if err := again.TearDown(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(pathF); !os.IsNotExist(err) {
		t.Errorf("the fenced pod's namespace, and its rules, are left: %v", err)
	}
	if out, _ := exec.Command("nsenter", "--net="+node, "iptables-save").Output(); strings.Contains(string(out), "FENCE") {
		t.Errorf("fence rules on the node:\n%s", out)
	}
}

// TestMasqueradeAddressIsNoPods: in a slice of 8 addresses, pods get the
// 4 between the gateway and the masquerade address, and no more.
func TestMasqueradeAddressIsNoPods(t *testing.T) {
	ctx := context.Background()
	_, node, state := nodeNetwork(t)
	m, err := network.New(network.Config{StateDir: state, PodCIDR: "10.42.7.8/29", NodeNetns: node})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, uid := range []string{"p1", "p2", "p3", "p4", "p5"} {
		_, ip, err := m.SetUp(ctx, network.Pod{UID: uid, Namespace: "default", Name: uid})
		if err != nil {
			got = append(got, "error")
			continue
		}
		got = append(got, ip)
		t.Cleanup(func() { _ = m.TearDown(ctx, network.Pod{UID: uid}) })
	}
	if strings.Join(got, " ") != "10.42.7.10 10.42.7.11 10.42.7.12 10.42.7.13 error" {
		t.Errorf("pods got %v; want .10 to .13, then none (.9 is the gateway, .14 the masquerade address)", got)
	}
}
