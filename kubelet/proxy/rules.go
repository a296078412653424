package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"minik8s/pkg/api"
)

// The chains the kernel proxy owns, in the nat and filter tables. Every
// chain of the package starts with chainPrefix, so that a sync removes the
// service and endpoint chains nothing needs any more, and nothing else.
const (
	chainPrefix      = "MINIK8S-"
	chainServices    = "MINIK8S-SERVICES"
	chainNodePorts   = "MINIK8S-NODEPORTS"
	chainPostrouting = "MINIK8S-POSTROUTING"
	chainMarkMasq    = "MINIK8S-MARK-MASQ"
	// masqMark marks the connections to SNAT on the way out: from a pod to
	// a Service answered by a pod of the same node (whose reply would
	// otherwise be bridged straight back, never un-NATed), and NodePort
	// traffic, whose reply must come back through this node.
	masqMark = "0x4000/0x4000"
)

// hooks are the jumps from the kernel's built-in chains into ours.
var hooks = []struct{ table, chain, target string }{
	{"nat", "PREROUTING", chainServices},
	{"nat", "OUTPUT", chainServices},
	{"nat", "POSTROUTING", chainPostrouting},
	{"filter", "INPUT", chainServices},
	{"filter", "FORWARD", chainServices},
	{"filter", "OUTPUT", chainServices},
}

// servicePort is one port of one Service with its ready endpoints
// ("ip:port"), as the rules need them.
type servicePort struct {
	namespace, name string
	port            api.ServicePort
	clusterIP       string
	endpoints       []string
}

func (sp servicePort) String() string {
	n := sp.namespace + "/" + sp.name
	if sp.port.Name != "" {
		n += ":" + sp.port.Name
	}
	return n
}

func (sp servicePort) protocol() string {
	if p := strings.ToLower(sp.port.Protocol); p != "" {
		return p
	}
	return "tcp"
}

// Nets are the node's pod range and the cluster's, which the rules tell
// apart: its pods' connections to its pods are masqueraded (so that the
// reply comes back through the rules), and so are their connections out
// of the cluster.
type Nets struct {
	PodCIDR, ClusterCIDR *net.IPNet
	// MasqueradeIP, in PodCIDR, is what the connections the node
	// masquerades into the cluster's pod range leave from
	// (network.MasqueradeAddress): never the node's own addresses, which
	// function pods trust, so that a pod cannot reach one through a node
	// port or a Service under the node's name.
	MasqueradeIP net.IP
}

// chainName is a chain's name for a service port or an endpoint of one:
// a hash, as kube-proxy's, since iptables limits names to 28 characters.
func chainName(kind string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return chainPrefix + kind + "-" + base32.StdEncoding.EncodeToString(h[:])[:16]
}

// ruleSet is the iptables-restore input that makes the nat and filter
// tables' MINIK8S chains exactly what the service ports need; existing
// lists the MINIK8S chains there are now (to remove those no longer used).
func ruleSet(ports []servicePort, nets Nets, existing map[string][]string) string {
	podCIDR := nets.PodCIDR
	slices.SortFunc(ports, func(a, b servicePort) int { return strings.Compare(a.String(), b.String()) })
	nat := &table{name: "nat"}
	filter := &table{name: "filter"}
	nat.chain(chainServices)
	nat.chain(chainNodePorts)
	nat.chain(chainPostrouting)
	nat.chain(chainMarkMasq)
	filter.chain(chainServices)
	nat.rule(chainMarkMasq, "-j MARK --or-mark "+strings.Split(masqMark, "/")[0])
	if nets.MasqueradeIP != nil && nets.ClusterCIDR != nil {
		nat.rule(chainPostrouting, fmt.Sprintf("-m comment --comment \"masqueraded into the pod range\" -m mark --mark %s -d %s -j SNAT --to-source %s", masqMark, nets.ClusterCIDR, nets.MasqueradeIP))
	}
	nat.rule(chainPostrouting, "-m mark --mark "+masqMark+" -j MASQUERADE")
	if nets.PodCIDR != nil && nets.ClusterCIDR != nil {
		// Pods reach beyond the cluster from their node's address, as
		// flannel's ipMasq has it; between pods addresses stay.
		nat.rule(chainPostrouting, fmt.Sprintf("-m comment --comment \"pods to outside the cluster\" -s %s ! -d %s -j MASQUERADE", nets.PodCIDR, nets.ClusterCIDR))
	}

	for _, sp := range ports {
		proto := sp.protocol()
		comment := fmt.Sprintf("-m comment --comment %q", sp.String())
		match := fmt.Sprintf("-p %s -m %s", proto, proto)
		if len(sp.endpoints) == 0 {
			// Refused at once, as kube-proxy does, rather than left to time out.
			if sp.clusterIP != "" {
				filter.rule(chainServices, fmt.Sprintf("%s -d %s/32 %s --dport %d -j REJECT --reject-with icmp-port-unreachable", comment, sp.clusterIP, match, sp.port.Port))
			}
			if sp.port.NodePort != 0 {
				filter.rule(chainServices, fmt.Sprintf("%s -m addrtype --dst-type LOCAL %s --dport %d -j REJECT --reject-with icmp-port-unreachable", comment, match, sp.port.NodePort))
			}
			continue
		}
		svc := chainName("SVC", sp.namespace, sp.name, sp.port.Name, strconv.Itoa(int(sp.port.Port)), proto)
		nat.chain(svc)
		if sp.clusterIP != "" {
			nat.rule(chainServices, fmt.Sprintf("%s -d %s/32 %s --dport %d -j %s", comment, sp.clusterIP, match, sp.port.Port, svc))
		}
		if sp.port.NodePort != 0 {
			nat.rule(chainNodePorts, fmt.Sprintf("%s %s --dport %d -j %s", comment, match, sp.port.NodePort, chainMarkMasq))
			nat.rule(chainNodePorts, fmt.Sprintf("%s %s --dport %d -j %s", comment, match, sp.port.NodePort, svc))
		}
		// Each endpoint in turn takes 1/n of what the ones before left.
		for i, ep := range sp.endpoints {
			sep := chainName("SEP", sp.namespace, sp.name, sp.port.Name, strconv.Itoa(int(sp.port.Port)), proto, ep)
			nat.chain(sep)
			if left := len(sp.endpoints) - i; left > 1 {
				nat.rule(svc, fmt.Sprintf("%s -m statistic --mode random --probability %.10f -j %s", comment, 1/float64(left), sep))
			} else {
				nat.rule(svc, fmt.Sprintf("%s -j %s", comment, sep))
			}
			host, _, _ := net.SplitHostPort(ep)
			if ip := net.ParseIP(host); ip != nil && podCIDR != nil && podCIDR.Contains(ip) {
				nat.rule(sep, fmt.Sprintf("%s -s %s -j %s", comment, podCIDR, chainMarkMasq))
			}
			nat.rule(sep, fmt.Sprintf("%s %s -j DNAT --to-destination %s", comment, match, ep))
		}
	}
	// Node ports last: they match any local address.
	nat.rule(chainServices, "-m addrtype --dst-type LOCAL -j "+chainNodePorts)

	var b strings.Builder
	for _, t := range []*table{nat, filter} {
		t.write(&b, existing[t.name])
	}
	return b.String()
}

// table collects one table's chains and rules.
type table struct {
	name   string
	chains []string
	rules  []string
}

func (t *table) chain(name string) { t.chains = append(t.chains, name) }

func (t *table) rule(chain, spec string) { t.rules = append(t.rules, "-A "+chain+" "+spec) }

// write declares (and so flushes) every chain, appends the rules and
// deletes the chains of the package that are no longer declared.
func (t *table) write(b *strings.Builder, existing []string) {
	// A stale chain is emptied (declared) before it goes: it may jump to
	// another.
	var stale []string
	for _, c := range existing {
		if strings.HasPrefix(c, chainPrefix) && !slices.Contains(t.chains, c) {
			stale = append(stale, c)
		}
	}
	fmt.Fprintf(b, "*%s\n", t.name)
	for _, c := range append(slices.Clone(t.chains), stale...) {
		fmt.Fprintf(b, ":%s - [0:0]\n", c)
	}
	for _, r := range t.rules {
		b.WriteString(r + "\n")
	}
	for _, c := range stale {
		fmt.Fprintf(b, "-X %s\n", c)
	}
	b.WriteString("COMMIT\n")
}
