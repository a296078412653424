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

	"minik8s/pkg/netns"
	"minik8s/pkg/netpol"
)

// A pod's NetworkPolicies are enforced where its fence is (fence.go), in
// its own namespace's filter table, the one place that sees every way in
// and out (a pod of the same bridge reaches it at layer 2). The table is
// the pod's alone, written whole by one iptables-restore from what the
// pod is (fenced or not) and what the policies allow it; rewritten only
// when that changes. Connections once allowed go on (ESTABLISHED and
// RELATED first: a policy's rules cost nothing to a connection after its
// first packet); the node (its gateway address: probes) always reaches
// the pod, as Kubernetes wants; everything else new on eth0 of a direction
// a policy isolates goes through the pod's chain of that direction, and
// is refused at its end.

const (
	policyInChain  = "MINIK8S-NP-IN"
	policyOutChain = "MINIK8S-NP-OUT"
)

// filterTable is the iptables-restore input of a pod's filter table; ""
// when the pod needs no rules.
func filterTable(fenced bool, gateway net.IP, cluster *net.IPNet, r netpol.Rules) string {
	if !fenced && !r.IngressIsolated && !r.EgressIsolated {
		return ""
	}
	var b strings.Builder
	b.WriteString("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n")
	if fenced {
		fmt.Fprintf(&b, ":%s - [0:0]\n", fenceChain)
	}
	var subs []string // chains of allowances with exceptions
	in := allowRules(policyInChain, "-s", r.Ingress, &subs)
	out := allowRules(policyOutChain, "-d", r.Egress, &subs)
	if r.IngressIsolated {
		fmt.Fprintf(&b, ":%s - [0:0]\n", policyInChain)
	}
	if r.EgressIsolated {
		fmt.Fprintf(&b, ":%s - [0:0]\n", policyOutChain)
	}
	for _, c := range subs {
		fmt.Fprintf(&b, ":%s - [0:0]\n", c)
	}
	if r.IngressIsolated || r.EgressIsolated {
		fmt.Fprintf(&b, "-A INPUT -i %s -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n", podIfName)
	}
	if fenced {
		fmt.Fprintf(&b, "-A INPUT -i %s -m conntrack --ctstate NEW -m comment --comment \"a function pod serves the platform only\" -j %s\n", podIfName, fenceChain)
		fmt.Fprintf(&b, "-A %s -s %s/32 -j RETURN\n", fenceChain, gateway)
		fmt.Fprintf(&b, "-A %s -s %s -p tcp -j REJECT --reject-with tcp-reset\n", fenceChain, cluster)
		fmt.Fprintf(&b, "-A %s -s %s -j REJECT --reject-with icmp-port-unreachable\n", fenceChain, cluster)
	}
	if r.IngressIsolated {
		fmt.Fprintf(&b, "-A INPUT -i %s -m comment --comment \"network policies: ingress\" -j %s\n", podIfName, policyInChain)
		fmt.Fprintf(&b, "-A %s -s %s/32 -m comment --comment \"the node always reaches its pods\" -j ACCEPT\n", policyInChain, gateway)
		b.WriteString(in)
		fmt.Fprintf(&b, "-A %s -p tcp -j REJECT --reject-with tcp-reset\n", policyInChain)
		fmt.Fprintf(&b, "-A %s -j REJECT --reject-with icmp-port-unreachable\n", policyInChain)
	}
	if r.EgressIsolated {
		fmt.Fprintf(&b, "-A OUTPUT -o %s -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n", podIfName)
		fmt.Fprintf(&b, "-A OUTPUT -o %s -m comment --comment \"network policies: egress\" -j %s\n", podIfName, policyOutChain)
		b.WriteString(out)
		fmt.Fprintf(&b, "-A %s -j REJECT --reject-with icmp-port-unreachable\n", policyOutChain)
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// allowRules are the rules of chain accepting the allowances, peers
// matched by dir (-s or -d); an allowance with exceptions jumps to a
// chain of its own (added to subs) that returns on them.
func allowRules(chain, dir string, as []netpol.Allow, subs *[]string) string {
	var b strings.Builder
	for _, a := range as {
		match := ""
		if a.CIDR != "0.0.0.0/0" {
			match = " " + dir + " " + a.CIDR
		}
		if a.Protocol != "" {
			match += " -p " + strings.ToLower(a.Protocol)
			if a.Port != 0 {
				match += fmt.Sprintf(" --dport %d", a.Port)
				if a.EndPort > a.Port {
					match += fmt.Sprintf(":%d", a.EndPort)
				}
			}
		}
		if len(a.Except) == 0 {
			fmt.Fprintf(&b, "-A %s%s -j ACCEPT\n", chain, match)
			continue
		}
		sub := fmt.Sprintf("%s-%d", chain, len(*subs))
		*subs = append(*subs, sub)
		fmt.Fprintf(&b, "-A %s%s -j %s\n", chain, match, sub)
		for _, e := range a.Except {
			fmt.Fprintf(&b, "-A %s %s %s -j RETURN\n", sub, dir, e)
		}
		fmt.Fprintf(&b, "-A %s -j ACCEPT\n", sub)
	}
	return b.String()
}

// SetPolicies makes the rules of the node's pods (by UID) those given;
// a pod not given has no policy. Pods not set up yet get theirs when they
// are (SetUp); a pod's table is written only when it changes.
func (m *Manager) SetPolicies(ctx context.Context, rules map[string]netpol.Rules) error {
	if rules == nil {
		rules = map[string]netpol.Rules{} // policies known: none
	}
	m.filterMu.Lock()
	m.policies = rules
	uids := make([]string, 0, len(rules)+len(m.tables))
	for uid := range rules {
		uids = append(uids, uid)
	}
	for uid := range m.tables {
		if _, ok := rules[uid]; !ok {
			uids = append(uids, uid)
		}
	}
	m.filterMu.Unlock()
	var errs []error
	for _, uid := range uids {
		if m.busy(uid) {
			continue // its SetUp writes the table, its TearDown drops it
		}
		if err := m.writeFilter(ctx, uid); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", uid, err))
		}
	}
	return errors.Join(errs...)
}

// writeFilter writes the pod's filter table if the pod is set up and its
// table is not known to be the one written last (a new manager, that of a
// restarted kubelet, knows none: it writes each once, emptying what a
// policy gone meanwhile left). Rules turn IPv6 off on the pod's
// interface: the pod network is IPv4, and a link-local IPv6 address on the
// bridge would be a way around them.
func (m *Manager) writeFilter(ctx context.Context, uid string) error {
	m.filterMu.Lock()
	defer m.filterMu.Unlock()
	path := m.Path(uid)
	if !netns.Is(path) {
		delete(m.tables, uid)
		return nil
	}
	table := filterTable(m.fenced[uid], m.Gateway(), m.clusterCIDR(), m.policies[uid])
	if last, written := m.tables[uid]; written && table == last {
		return nil
	}
	input := table
	if input == "" { // rules no longer needed: an empty table
		input = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n"
	}
	err := netns.Do(path, func() error {
		if table != "" {
			err := os.WriteFile(filepath.Join("/proc/sys/net/ipv6/conf", podIfName, "disable_ipv6"), []byte("1"), 0o644)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("turning IPv6 off: %w", err)
			}
		}
		// Started from this thread, so in the pod's namespace.
		cmd := exec.CommandContext(ctx, "iptables-restore", "--wait")
		cmd.Stdin = strings.NewReader(input)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("iptables-restore: %w: %s", err, bytes.TrimSpace(out))
		}
		return nil
	})
	if err != nil {
		delete(m.tables, uid) // written again on the next pass
		return err
	}
	m.tables[uid] = table
	return nil
}
