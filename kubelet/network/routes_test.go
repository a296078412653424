package network_test

import (
	"net"
	"sort"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"minik8s/kubelet/network"
	"minik8s/pkg/netns"
)

// TestRoutesToOtherNodes: the routes to other nodes' pod CIDRs follow what
// is wanted, leave routes of others alone, and say which cannot be made.
func TestRoutesToOtherNodes(t *testing.T) {
	_, node, _ := nodeNetwork(t)
	var r *network.Routes
	var h *netlink.Handle
	err := netns.Do(node, func() (err error) {
		if h, err = netlink.NewHandle(); err != nil {
			return err
		}
		if r, err = network.NewRoutes(); err != nil {
			return err
		}
		// The node's leg of the underlay, and a route someone else made.
		link := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, PeerName: "peer0"}
		if err := h.LinkAdd(link); err != nil {
			return err
		}
		addr, _ := netlink.ParseAddr("10.99.0.1/24")
		if err := h.AddrAdd(link, addr); err != nil {
			return err
		}
		if err := h.LinkSetUp(link); err != nil {
			return err
		}
		_, other, _ := net.ParseCIDR("10.50.0.0/16")
		return h.RouteAdd(&netlink.Route{Dst: other, Gw: net.ParseIP("10.99.0.9")})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); h.Close() })
	routes := func() string {
		t.Helper()
		list, err := h.RouteList(nil, netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rt := range list {
			switch {
			case rt.Gw != nil:
				out = append(out, rt.Dst.String()+" via "+rt.Gw.String())
			case rt.Protocol == network.RouteProtocol:
				out = append(out, rt.Dst.String()+" src "+rt.Src.String())
			}
		}
		sort.Strings(out)
		return strings.Join(out, ", ")
	}
	if err := r.Sync(map[string]string{"10.42.1.0/24": "10.99.0.2", "10.42.2.0/24": "10.99.0.3"}); err != nil {
		t.Fatal(err)
	}
	if got := routes(); got != "10.42.1.0/24 via 10.99.0.2, 10.42.2.0/24 via 10.99.0.3, 10.50.0.0/16 via 10.99.0.9" {
		t.Fatalf("routes: %s", got)
	}
	// A node moved, another left.
	if err := r.Sync(map[string]string{"10.42.1.0/24": "10.99.0.4"}); err != nil {
		t.Fatal(err)
	}
	if got := routes(); got != "10.42.1.0/24 via 10.99.0.4, 10.50.0.0/16 via 10.99.0.9" {
		t.Fatalf("routes after a move: %s", got)
	}
	// A gateway off this node's networks: refused, named, the rest made.
	err = r.Sync(map[string]string{"10.42.1.0/24": "10.99.0.4", "10.42.3.0/24": "192.0.2.1"})
	if err == nil || !strings.Contains(err.Error(), "10.42.3.0/24 via 192.0.2.1") {
		t.Fatalf("an unreachable gateway: %v", err)
	}
	if got := routes(); got != "10.42.1.0/24 via 10.99.0.4, 10.50.0.0/16 via 10.99.0.9" {
		t.Fatalf("routes: %s", got)
	}
	// Via the node's own address: out of its link, from it (the service
	// range); kept as it is by the next sync.
	for range 2 {
		if err := r.Sync(map[string]string{"10.42.1.0/24": "10.99.0.4", "10.43.0.0/16": "10.99.0.1"}); err != nil {
			t.Fatal(err)
		}
		if got := routes(); got != "10.42.1.0/24 via 10.99.0.4, 10.43.0.0/16 src 10.99.0.1, 10.50.0.0/16 via 10.99.0.9" {
			t.Fatalf("routes with the service range: %s", got)
		}
	}
}
