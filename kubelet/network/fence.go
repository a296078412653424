package network

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"

	"minik8s/pkg/netns"
)

// A fenced pod (a function's) serves the platform only: it takes new
// connections from its node and from outside the pod range (other nodes,
// their runners), never from the pod range. The rules live in the pod's
// own namespace, the one place that sees every way in: a pod of the same
// bridge reaches it at layer 2, which the node's iptables sees only where
// br_netfilter is loaded. There the pod range is no node's but its gateway
// (the node itself); whatever a node forwards into the pod range under its
// own name (a node port, a pod reaching a Service of its own node) it
// masquerades to its MasqueradeAddress, inside the pod range, so that a
// fenced pod refuses it as it would its origin. The rules go with the
// namespace: nothing is left once the pod is gone.

// fenceChain is the fenced pod's chain in its own filter table, which
// policy.go writes with the pod's NetworkPolicies: new connections on its
// interface from the pod range, but from the gateway, are refused at once.
const fenceChain = "MINIK8S-FENCE"

// fence marks the pod fenced (or not) and writes its filter table; fresh
// says its namespace is new, its table empty.
func (m *Manager) fence(ctx context.Context, uid string, fenced, fresh bool) error {
	m.filterMu.Lock()
	if fresh {
		m.tables[uid] = ""
	}
	if fenced {
		m.fenced[uid] = true
	} else {
		delete(m.fenced, uid)
	}
	// A restarted kubelet's pod keeps the table it has until the first
	// pass over the policies (SetPolicies) writes it: written now, it
	// would lack them.
	keep := !fresh && !fenced && m.policies == nil
	m.filterMu.Unlock()
	if keep {
		return nil
	}
	return m.writeFilter(ctx, uid)
}

// clusterCIDR is the cluster's pod range (the node's slice when unknown).
func (m *Manager) clusterCIDR() *net.IPNet {
	if _, n, err := net.ParseCIDR(m.cfg.ClusterCIDR); err == nil {
		return n
	}
	_, n, _ := net.ParseCIDR(m.cfg.PodCIDR)
	return n
}

// MasqueradeAddress is the address of a node's pod CIDR that the node's
// connections into the pod range leave from when it masquerades them (the
// kernel proxy's SNAT): the last of the slice, which no pod gets. It is in
// the pod range, so a fenced pod refuses what comes from it, and in the
// node's slice, so other nodes route the replies back (host-gw).
func MasqueradeAddress(podCIDR string) (net.IP, error) {
	_, n, err := net.ParseCIDR(podCIDR)
	if err != nil || n.IP.To4() == nil {
		return nil, fmt.Errorf("pod CIDR %q is not an IPv4 range", podCIDR)
	}
	if ones, _ := n.Mask.Size(); ones > 29 {
		return nil, fmt.Errorf("pod CIDR %q is too small: a node's slice needs at least 8 addresses", podCIDR)
	}
	ip := make(net.IP, 4)
	for i := range ip {
		ip[i] = n.IP.To4()[i] | ^n.Mask[i]
	}
	ip[3]-- // the broadcast address's predecessor
	return ip, nil
}

// ensureMasqueradeAddress puts the masquerade address on the bridge, so
// that the node's pods reach it at layer 2 with their replies (from other
// nodes they are routed to this node, whose conntrack undoes the SNAT
// before routing). An address host-local handed to a pod before it was
// kept out of the range stays that pod's.
func (m *Manager) ensureMasqueradeAddress() error {
	ip, err := MasqueradeAddress(m.cfg.PodCIDR)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(m.cfg.StateDir, "ipam", networkName, ip.String())); err == nil {
		return fmt.Errorf("the masquerade address %s is held by a pod set up before it was reserved: pods of this node reach their Services once that pod is gone", ip)
	}
	return netns.Do(m.cfg.NodeNetns, func() error {
		br, err := netlink.LinkByName(m.cfg.Bridge)
		if err != nil {
			return fmt.Errorf("bridge %s: %w", m.cfg.Bridge, err)
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(32, 32)}}
		if err := netlink.AddrReplace(br, addr); err != nil {
			return fmt.Errorf("putting the masquerade address %s on bridge %s: %w", ip, m.cfg.Bridge, err)
		}
		return nil
	})
}
