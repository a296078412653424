package network

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

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

// fenceChain is the fenced pod's chain in its own filter table.
const fenceChain = "MINIK8S-FENCE"

// fenceRules is the iptables-restore input of a fenced pod's filter table
// (the whole table: nothing else writes it): new connections on its
// interface from the pod range, but from the gateway, are refused at once.
func fenceRules(gateway net.IP, cluster *net.IPNet) string {
	var b strings.Builder
	b.WriteString("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n")
	fmt.Fprintf(&b, ":%s - [0:0]\n", fenceChain)
	fmt.Fprintf(&b, "-A INPUT -i %s -m conntrack --ctstate NEW -m comment --comment \"a function pod serves the platform only\" -j %s\n", podIfName, fenceChain)
	fmt.Fprintf(&b, "-A %s -s %s/32 -j RETURN\n", fenceChain, gateway)
	fmt.Fprintf(&b, "-A %s -s %s -p tcp -j REJECT --reject-with tcp-reset\n", fenceChain, cluster)
	fmt.Fprintf(&b, "-A %s -s %s -j REJECT --reject-with icmp-port-unreachable\n", fenceChain, cluster)
	b.WriteString("COMMIT\n")
	return b.String()
}

// fence writes the fence into the pod's namespace at path, and turns IPv6
// off on its interface: the pod network is IPv4, and a link-local IPv6
// address on the bridge would be a way around the rules.
func (m *Manager) fence(ctx context.Context, path string) error {
	rules := fenceRules(m.Gateway(), m.clusterCIDR())
	return netns.Do(path, func() error {
		err := os.WriteFile(filepath.Join("/proc/sys/net/ipv6/conf", podIfName, "disable_ipv6"), []byte("1"), 0o644)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("turning IPv6 off: %w", err)
		}
		// Started from this thread, so in the pod's namespace.
		cmd := exec.CommandContext(ctx, "iptables-restore", "--wait")
		cmd.Stdin = strings.NewReader(rules)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("iptables-restore: %w: %s", err, bytes.TrimSpace(out))
		}
		return nil
	})
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
