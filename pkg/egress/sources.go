package egress

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
)

// OwnAddresses is the Source of this machine's addresses, read from its
// interfaces at each check, so that an address added since (a bridge, a
// new link) is refused as soon as it exists. Only the addresses
// themselves: their subnets hold other machines.
func OwnAddresses() ([]Range, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("reading this machine's addresses: %w", err)
	}
	out := make([]Range, 0, len(addrs))
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			continue
		}
		addr = addr.Unmap()
		out = append(out, Range{Prefix: netip.PrefixFrom(addr, addr.BitLen()), What: "an address of this machine"})
	}
	return out, nil
}

// Host is the Range of a single address, when s is one (in any spelling
// Literal reads) or a URL whose host is one; ok is false for names.
func Host(s, what string) (Range, bool) {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		s = u.Hostname()
	}
	addr, ok := Literal(s)
	if !ok {
		return Range{}, false
	}
	addr = addr.WithZone("").Unmap()
	return Range{Prefix: netip.PrefixFrom(addr, addr.BitLen()), What: what}, true
}

// CIDR is the Range of a CIDR string; ok is false when s is not one.
func CIDR(s, what string) (Range, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return Range{}, false
	}
	return Range{Prefix: normalize(p), What: what}, true
}
