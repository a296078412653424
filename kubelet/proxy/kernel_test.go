package proxy_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"

	"minik8s/kubelet/proxy"
	"minik8s/pkg/netns"
	"minik8s/test/harness"
)

// The addresses below exist only in the rules of a namespace the test
// creates (or in none): no packet is sent.
func TestRuleSet(t *testing.T) {
	_, podCIDR, _ := net.ParseCIDR("127.42.0.0/24")
	_, clusterCIDR, _ := net.ParseCIDR("127.42.0.0/16")
	nets := proxy.Nets{PodCIDR: podCIDR, ClusterCIDR: clusterCIDR, MasqueradeIP: net.ParseIP("127.42.0.254")}
	cases := []struct {
		name     string
		ports    []proxy.ServicePort
		existing map[string][]string
		want     []string
		wantNot  []string
	}{{
		name:  "endpoints share the traffic, those of the node's pods masqueraded",
		ports: []proxy.ServicePort{proxy.NewServicePort("default", "web", 80, 0, "127.43.0.5", "127.42.0.7:8080", "127.42.1.9:8080")},
		want: []string{
			`-A MINIK8S-SERVICES -m comment --comment "default/web" -d 127.43.0.5/32 -p tcp -m tcp --dport 80 -j MINIK8S-SVC-`,
			`-m statistic --mode random --probability 0.5000000000 -j MINIK8S-SEP-`,
			`-s 127.42.0.0/24 -j MINIK8S-MARK-MASQ`,
			`-p tcp -m tcp -j DNAT --to-destination 127.42.0.7:8080`,
			`-p tcp -m tcp -j DNAT --to-destination 127.42.1.9:8080`,
			"-A MINIK8S-SERVICES -m addrtype --dst-type LOCAL -j MINIK8S-NODEPORTS",
		},
		wantNot: []string{"REJECT"},
	}, {
		name: "pods' connections out of the cluster masqueraded, with or without services",
		want: []string{`-A MINIK8S-POSTROUTING -m comment --comment "pods to outside the cluster" -s 127.42.0.0/24 ! -d 127.42.0.0/16 -j MASQUERADE`},
	}, {
		// Never from the node's own addresses, which function pods trust.
		name: "what the node masquerades into the pod range leaves from the masquerade address, before anything else",
		want: []string{"-A MINIK8S-POSTROUTING -m comment --comment \"masqueraded into the pod range\" -m mark --mark 0x4000/0x4000 -d 127.42.0.0/16 -j SNAT --to-source 127.42.0.254\n" +
			"-A MINIK8S-POSTROUTING -m mark --mark 0x4000/0x4000 -j MASQUERADE"},
	}, {
		name:    "no endpoint: refused",
		ports:   []proxy.ServicePort{proxy.NewServicePort("default", "empty", 80, 30080, "127.43.0.6")},
		want:    []string{"-d 127.43.0.6/32 -p tcp -m tcp --dport 80 -j REJECT", "-m addrtype --dst-type LOCAL -p tcp -m tcp --dport 30080 -j REJECT"},
		wantNot: []string{"DNAT"},
	}, {
		name:  "node port: masqueraded, then to the service",
		ports: []proxy.ServicePort{proxy.NewServicePort("default", "np", 80, 30081, "127.43.0.8", "127.42.1.9:8080")},
		want:  []string{"-A MINIK8S-NODEPORTS -m comment --comment \"default/np\" -p tcp -m tcp --dport 30081 -j MINIK8S-MARK-MASQ", "--dport 30081 -j MINIK8S-SVC-"},
		// The endpoint is on another node: its reply comes back routed.
		wantNot: []string{"-s 127.42.0.0/24 -j MINIK8S-MARK-MASQ"},
	}, {
		name:     "chains no longer used are emptied and removed; others' are left",
		existing: map[string][]string{"nat": {"MINIK8S-SVC-OLD", "MINIK8S-SERVICES", "OTHER"}},
		want:     []string{":MINIK8S-SVC-OLD - [0:0]", "-X MINIK8S-SVC-OLD"},
		wantNot:  []string{"OTHER", "-X MINIK8S-SERVICES"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := proxy.RuleSet(tc.ports, nets, tc.existing)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in\n%s", w, got)
				}
			}
		})
	}
}

// TestRulesInTheKernel: the rules go into a fresh network namespace in one
// iptables-restore; a second set replaces the first, removing the chains
// of the service that is gone (left: SERVICES in both tables, web's SVC
// and SEP), and the jumps into them are made once.
func TestRulesInTheKernel(t *testing.T) {
	path, nets := kernelNamespace(t)
	ctx := context.Background()
	save := func() string {
		t.Helper()
		out, err := exec.Command("nsenter", "--net="+path, "iptables-save").Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	web := proxy.NewServicePort("default", "web", 80, 0, "127.43.0.5", "127.42.0.7:8080")
	old := proxy.NewServicePort("default", "old", 80, 30090, "127.43.0.9", "127.42.0.8:8080")
	// The first write reads the chains there are; the next ones know them.
	var known map[string][]string
	for _, ports := range [][]proxy.ServicePort{{web, old}, {web, old}} {
		if err := netns.Do(path, func() (err error) { known, err = proxy.Apply(ctx, ports, nets, known); return err }); err != nil {
			t.Fatal(err)
		}
	}
	first := save()
	for _, w := range []string{"--to-destination 127.42.0.7:8080", "--to-destination 127.42.0.8:8080", "--dport 30090", "! -d 127.42.0.0/16"} {
		if !strings.Contains(first, w) {
			t.Fatalf("missing %q in\n%s", w, first)
		}
	}
	if n := strings.Count(first, "-A PREROUTING"); n != 1 {
		t.Fatalf("%d jumps from PREROUTING after two syncs:\n%s", n, first)
	}
	if err := netns.Do(path, func() (err error) { _, err = proxy.Apply(ctx, []proxy.ServicePort{web}, nets, known); return err }); err != nil {
		t.Fatal(err)
	}
	second := save()
	if strings.Contains(second, "127.42.0.8") || strings.Contains(second, "30090") || strings.Count(second, ":MINIK8S-S") != 4 {
		t.Fatalf("the old service's rules or chains are left:\n%s", second)
	}
}

// TestConntrackOfRemovedEndpoints: once a Service's endpoint is gone, the
// conntrack entries of the connections its rules sent there go too (a UDP
// client keeping its port would otherwise follow its entry to the removed
// pod); connections made to the endpoint's own address, and those of the
// other endpoints, stay.
func TestConntrackOfRemovedEndpoints(t *testing.T) {
	path, nets := kernelNamespace(t)
	dns := proxy.NewServicePort("default", "dns", 53, 0, "127.43.0.5", "127.42.0.7:5353").UDP()
	other := proxy.NewServicePort("default", "other", 53, 0, "127.43.0.6", "127.42.0.8:5353").UDP()
	moved := proxy.NewServicePort("default", "dns", 53, 0, "127.43.0.5", "127.42.0.9:5353").UDP()
	send := func(addrs ...string) {
		t.Helper()
		err := netns.Do(path, func() error {
			for _, a := range addrs {
				c, err := net.Dial("udp", a)
				if err != nil {
					return err
				}
				_, _ = c.Write([]byte("q"))
				c.Close()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Replies by the endpoint each entry expects, by where the connection went.
	entries := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		err := netns.Do(path, func() error {
			flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, netlink.FAMILY_V4)
			for _, f := range flows {
				if f.Forward.Protocol == syscall.IPPROTO_UDP {
					out[net.JoinHostPort(f.Forward.DstIP.String(), strconv.Itoa(int(f.Forward.DstPort)))] =
						net.JoinHostPort(f.Reverse.SrcIP.String(), strconv.Itoa(int(f.Reverse.SrcPort)))
				}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	err := netns.Do(path, func() error {
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err == nil {
			_, err = proxy.Apply(context.Background(), []proxy.ServicePort{dns, other}, nets, nil)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	send("127.43.0.5:53", "127.43.0.6:53", "127.42.0.7:5353")
	before := entries()
	if before["127.43.0.5:53"] != "127.42.0.7:5353" || before["127.43.0.6:53"] != "127.42.0.8:5353" || before["127.42.0.7:5353"] != "127.42.0.7:5353" {
		t.Fatalf("conntrack before: %v", before)
	}
	var n uint
	err = netns.Do(path, func() (err error) {
		if _, err = proxy.Apply(context.Background(), []proxy.ServicePort{moved, other}, nets, nil); err != nil {
			return err
		}
		n, err = proxy.ForgetGone([]proxy.ServicePort{dns, other}, []proxy.ServicePort{moved, other})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	after := entries()
	if _, ok := after["127.43.0.5:53"]; ok || n != 1 {
		t.Errorf("the entry towards the removed endpoint stayed (%d deleted): %v", n, after)
	}
	if after["127.43.0.6:53"] != "127.42.0.8:5353" || after["127.42.0.7:5353"] != "127.42.0.7:5353" {
		t.Errorf("entries that must stay went: %v", after)
	}
	// The same client port now reaches the endpoint the Service has.
	send("127.43.0.5:53")
	if got := entries()["127.43.0.5:53"]; got != "127.42.0.9:5353" {
		t.Errorf("a new packet to the Service goes to %q, want the live endpoint 127.42.0.9:5353", got)
	}
}

// kernelNamespace makes a network namespace for rules (removed at the
// test's end) and the loopback ranges its rules use.
func kernelNamespace(t *testing.T) (string, proxy.Nets) {
	t.Helper()
	if os.Geteuid() != 0 {
		harness.NeedE2E(t, "network namespaces need root")
	}
	if _, err := exec.LookPath("iptables-restore"); err != nil {
		harness.NeedE2E(t, "iptables is missing (apt-get install iptables)")
	}
	path := filepath.Join(t.TempDir(), "ns")
	if err := netns.New(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netns.Remove(path) })
	_, podCIDR, _ := net.ParseCIDR("127.42.0.0/24")
	_, clusterCIDR, _ := net.ParseCIDR("127.42.0.0/16")
	nets := proxy.Nets{PodCIDR: podCIDR, ClusterCIDR: clusterCIDR}
	return path, nets
}
