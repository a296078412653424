package proxy

import (
	"net"
	"strconv"
	"syscall"

	"github.com/vishvananda/netlink"
)

// An endpoint is one address a Service port sends connections to.
type endpoint struct {
	proto uint8
	ip    net.IP
	port  uint16
}

func (e endpoint) key() string {
	return strconv.Itoa(int(e.proto)) + "/" + net.JoinHostPort(e.ip.String(), strconv.Itoa(int(e.port)))
}

// endpointsOf lists the endpoints the ports send to, by key.
func endpointsOf(ports []servicePort) map[string]endpoint {
	out := map[string]endpoint{}
	for _, sp := range ports {
		proto := uint8(syscall.IPPROTO_TCP)
		if sp.protocol() == "udp" {
			proto = syscall.IPPROTO_UDP
		}
		for _, t := range sp.endpoints {
			host, port, err := net.SplitHostPort(t)
			n, perr := strconv.ParseUint(port, 10, 16)
			if ip := net.ParseIP(host); err == nil && perr == nil && ip != nil {
				e := endpoint{proto: proto, ip: ip, port: uint16(n)}
				out[e.key()] = e
			}
		}
	}
	return out
}

// gone lists the endpoints of before that are not in after.
func gone(before, after map[string]endpoint) []endpoint {
	var out []endpoint
	for k, e := range before {
		if _, ok := after[k]; !ok {
			out = append(out, e)
		}
	}
	return out
}

// forgetFilter matches the connections a Service's rules sent to one of
// its endpoints (translated: the reply comes from the endpoint, while the
// connection was made to another address), not those made to the
// endpoint's address itself.
type forgetFilter []endpoint

func (f forgetFilter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	for _, e := range f {
		if flow.Forward.Protocol == e.proto && flow.Reverse.SrcPort == e.port && flow.Reverse.SrcIP.Equal(e.ip) &&
			!(flow.Forward.DstIP.Equal(e.ip) && flow.Forward.DstPort == e.port) {
			return true
		}
	}
	return false
}

// forget deletes the conntrack entries of the connections the rules sent
// to endpoints that left, as kube-proxy does for UDP (here TCP too): a
// packet of such an entry would follow it to the removed pod instead of
// the rules to a live one (a UDP client that keeps its port, a TCP
// connection whose entry outlived its pod). It returns how many went.
func forget(eps []endpoint) (uint, error) {
	if len(eps) == 0 {
		return 0, nil
	}
	return netlink.ConntrackDeleteFilters(netlink.ConntrackTable, netlink.FAMILY_V4, forgetFilter(eps))
}
