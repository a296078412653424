package network

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"

	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"minik8s/pkg/netns"
)

// A pod's frames carry its own addresses, or go no further than its port.
// Pods keep CAP_NET_RAW (containerd's default) and the node's pods share
// its bridge: without this, a pod could claim the gateway's address toward
// a function pod, whose fence takes that address for the node's, or
// another pod's address or MAC toward the node and the bridge, and so
// receive, and answer, what is sent to that pod (a runner's calls). Every
// pod, as Calico's and Cilium's anti-spoofing treat every pod: any pod may
// be the one that lies, and what it lies about (an address a Service
// trusts, a pod's calls) is every pod's. Two things on each pod's port of
// the bridge, with what Debian's kernel and iptables package have, and no
// br_netfilter:
//   - the bridge learns nothing from a pod's port: the pod's MAC is a
//     static entry on its own port, set here. No frame moves it, not even
//     a link-local one (LLDP), which the bridge learns from before any
//     filter sees it; and none of the pod's traffic is flooded to the
//     other ports once a learnt entry would have aged out;
//   - a rule of nf_tables' bridge family (ebtables-nft), at prerouting,
//     before the bridge forwards or delivers a frame, passes from the port
//     only the IPv4 of the pod's MAC and address and the ARP of its MAC
//     and address (sender fields and frame alike), and drops the rest (the
//     pod network is IPv4 only).
// The port settings go with the veth; the rules are remade from the CNI
// results of the pods the node keeps on every set up and tear down, so a
// pod gone is a rule gone.

// antiSpoofChain is the chain of the bridge family's nat table, jumped to
// first from its PREROUTING, that holds every pod port's rules.
const antiSpoofChain = "MINIK8S-ANTISPOOF"

// podPort is a pod's side of the bridge: its veth on the node, and the
// MAC and address the pod was given.
type podPort struct {
	veth string
	mac  net.HardwareAddr
	ip   net.IP
}

// portOf reads a pod's port from its CNI result (the bridge plugin's:
// the bridge, the node's end of the veth, the pod's end in its namespace).
func portOf(res *types100.Result, bridge string) (podPort, error) {
	var p podPort
	pod := -1
	for i, iface := range res.Interfaces {
		switch {
		case iface.Sandbox != "":
			pod = i
			p.mac, _ = net.ParseMAC(iface.Mac)
		case iface.Name != bridge:
			p.veth = iface.Name
		}
	}
	for _, c := range res.IPs {
		if c.Address.IP.To4() != nil && (c.Interface == nil || *c.Interface == pod) {
			p.ip = c.Address.IP.To4()
			break
		}
	}
	if p.veth == "" || len(p.mac) != 6 || p.ip == nil {
		return podPort{}, fmt.Errorf("the CNI result names no veth, MAC and IPv4 address of the pod (%v)", res)
	}
	return p, nil
}

// antiSpoofRules is the ebtables-nft-restore input (with --noflush) that
// makes the chain hold the rules of these ports, and only those.
func antiSpoofRules(ports []podPort) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*nat\n:%s RETURN\n", antiSpoofChain)
	for _, p := range ports {
		fmt.Fprintf(&b, "-A %s -i %s -s %s -p IPv4 --ip-src %s -j RETURN\n", antiSpoofChain, p.veth, p.mac, p.ip)
		fmt.Fprintf(&b, "-A %s -i %s -s %s -p ARP --arp-mac-src %s --arp-ip-src %s -j RETURN\n", antiSpoofChain, p.veth, p.mac, p.mac, p.ip)
		fmt.Fprintf(&b, "-A %s -i %s -j DROP\n", antiSpoofChain, p.veth)
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// guard pins the pod's MAC to its port and gives the port its rules; the
// rules of every pod are written again unless they are known to be in
// place already (a restarted kubelet's pods but the first).
func (m *Manager) guard(ctx context.Context, res *types100.Result, rewrite bool) error {
	p, err := portOf(res, m.cfg.Bridge)
	if err != nil {
		return err
	}
	err = netns.Do(m.cfg.NodeNetns, func() error {
		veth, err := netlink.LinkByName(p.veth)
		if err != nil {
			return fmt.Errorf("the pod's veth: %w", err)
		}
		if err := netlink.LinkSetLearning(veth, false); err != nil {
			return fmt.Errorf("turning learning off on %s: %w", p.veth, err)
		}
		fdb := &netlink.Neigh{LinkIndex: veth.Attrs().Index, Family: unix.AF_BRIDGE, Flags: netlink.NTF_MASTER,
			State: netlink.NUD_NOARP, HardwareAddr: p.mac}
		if err := netlink.NeighSet(fdb); err != nil {
			return fmt.Errorf("pinning %s to %s: %w", p.mac, p.veth, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	m.rulesMu.Lock()
	ruled := m.ruled
	m.rulesMu.Unlock()
	if ruled && !rewrite {
		return nil
	}
	return m.writeRules(ctx)
}

// writeRules writes the rules of the ports of every pod this node keeps.
// A pod whose result is not readable while it is being set up or torn
// down (by its own call, which writes again once done) is left out.
func (m *Manager) writeRules(ctx context.Context) error {
	m.rulesMu.Lock()
	defer m.rulesMu.Unlock()
	uids, err := m.Pods()
	if err != nil {
		return err
	}
	var ports []podPort
	for _, uid := range uids {
		res, err := m.cachedResult(Pod{UID: uid}, m.Path(uid))
		if errors.Is(err, errNoResult) || err != nil && m.busy(uid) {
			continue
		}
		if err != nil {
			return fmt.Errorf("the network of pod %s: %w", uid, err)
		}
		p, err := portOf(res, m.cfg.Bridge)
		if err != nil {
			return fmt.Errorf("the network of pod %s: %w", uid, err)
		}
		ports = append(ports, p)
	}
	slices.SortFunc(ports, func(a, b podPort) int { return strings.Compare(a.veth, b.veth) })
	return netns.Do(m.cfg.NodeNetns, func() error {
		// Started from this thread, so in the node's namespace.
		cmd := exec.CommandContext(ctx, "ebtables-nft-restore", "--noflush")
		cmd.Stdin = strings.NewReader(antiSpoofRules(ports))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("ebtables-nft-restore (the kernel needs nf_tables' bridge family): %w: %s", err, bytes.TrimSpace(out))
		}
		if m.ruled {
			return nil
		}
		out, err := exec.CommandContext(ctx, "ebtables-nft-save", "-t", "nat").CombinedOutput()
		if err != nil {
			return fmt.Errorf("ebtables-nft-save: %w: %s", err, bytes.TrimSpace(out))
		}
		if !slices.Contains(strings.Split(string(out), "\n"), "-A PREROUTING -j "+antiSpoofChain) {
			out, err := exec.CommandContext(ctx, "ebtables-nft", "-t", "nat", "-I", "PREROUTING", "1", "-j", antiSpoofChain).CombinedOutput()
			if err != nil {
				return fmt.Errorf("ebtables-nft -t nat -I PREROUTING -j %s: %w: %s", antiSpoofChain, err, bytes.TrimSpace(out))
			}
		}
		m.ruled = true
		return nil
	})
}

// busy tells whether the pod is being set up or torn down.
func (m *Manager) busy(uid string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.locks[uid]
	return ok
}
