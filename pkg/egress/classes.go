package egress

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"minik8s/pkg/errdefs"
)

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	broadcast   = netip.MustParseAddr("255.255.255.255")
	// Cloud metadata services hand out the machine's credentials: most
	// clouds at 169.254.169.254 (link-local anyway), AWS also at
	// fd00:ec2::254, Alibaba at 100.100.100.200.
	metadata = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"),
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("100.100.100.200"),
	}
	// IPv6 ranges that carry an IPv4 address a gateway may deliver to:
	// IPv4-compatible (deprecated), NAT64's well-known and local-use
	// prefixes, 6to4.
	v4compatible = netip.MustParsePrefix("::/96")
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour    = netip.MustParsePrefix("2002::/16")
)

// never says why addr can be no receiver at all, whatever the operator
// opened; "" when it can be one.
func never(addr netip.Addr) string {
	switch {
	case addr.IsUnspecified() || thisNetwork.Contains(addr):
		return "an unspecified address (a dial reaches this machine)"
	case addr.IsMulticast():
		return "a multicast address"
	case addr == broadcast:
		return "the broadcast address"
	}
	return ""
}

// builtIn says which of the always-refused classes addr is in; "" when
// none.
func builtIn(addr netip.Addr) string {
	for _, m := range metadata {
		if addr == m {
			return "a cloud metadata address"
		}
	}
	switch {
	case addr.IsLoopback():
		return "a loopback address (the apiserver's local port, etcd and the kubelet listen there)"
	case addr.IsLinkLocalUnicast():
		return "a link-local address"
	}
	return ""
}

// embeddedIPv4 is the IPv4 address an IPv6 address carries by a
// translation or tunnel scheme, and the scheme's name.
func embeddedIPv4(addr netip.Addr) (netip.Addr, string, bool) {
	if !addr.Is6() {
		return netip.Addr{}, "", false
	}
	b := addr.As16()
	last := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	switch {
	case addr == netip.IPv6Loopback() || addr.IsUnspecified():
		return netip.Addr{}, "", false
	case v4compatible.Contains(addr):
		return last, "an IPv4-compatible", true
	case nat64.Contains(addr), nat64Local.Contains(addr):
		return last, "a NAT64", true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "a 6to4", true
	}
	return netip.Addr{}, "", false
}

// CheckURL refuses what can be told from a URL alone: what ParseURL
// refuses, and a host that is an address the guard refuses (CheckHost).
// Names, localhost among them, are judged at the dial, by the address
// they resolve to then.
func (g *Guard) CheckURL(raw string) error {
	u, err := ParseURL(raw)
	if err != nil {
		return err
	}
	return g.CheckHost(u.Hostname())
}

// ParseURL parses a URL the platform is to send a caller's request to:
// http or https, a host, and no user info (credentials in a URL the
// platform would send on).
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errdefs.BadRequest("", "not a URL: %v", unwrapURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errdefs.BadRequest("", "only http and https URLs are taken, not %q", u.Scheme)
	}
	if u.User != nil {
		return nil, errdefs.BadRequest("", "the URL carries user info (credentials): the platform sends none")
	}
	if u.Hostname() == "" {
		return nil, errdefs.BadRequest("", "the URL names no host")
	}
	return u, nil
}

// CheckHost checks a URL's host when it is an address, in any spelling a
// resolver takes (127.1, 2130706433, 0x7f.0.0.1, 0177.0.0.1,
// ::ffff:127.0.0.1); a name passes, for the dial to check.
func (g *Guard) CheckHost(host string) error {
	if addr, ok := Literal(host); ok {
		return g.Check(addr)
	}
	return nil
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// Literal reads host as an IP address when it is one in any spelling a
// resolver would take: IPv6 (with a zone), dotted IPv4, and the forms of
// inet_aton, which C resolvers accept for names: one to four parts, each
// decimal, octal (leading 0) or hex (0x), the last filling the bytes
// left (127.1, 2130706433, 0x7f000001, 0177.0.0.01). A trailing dot is
// ignored.
func Literal(host string) (netip.Addr, bool) {
	host = strings.TrimSuffix(host, ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true
	}
	return parseInetAton(host)
}

func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		v, ok := atonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	n := len(vals)
	var out uint64
	for i, v := range vals[:n-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		out |= v << (8 * (3 - i))
	}
	if vals[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	out |= vals[n-1]
	return netip.AddrFrom4([4]byte{byte(out >> 24), byte(out >> 16), byte(out >> 8), byte(out)}), true
}

// atonPart reads one part of an inet_aton address.
func atonPart(p string) (uint64, bool) {
	base, digits := 10, p
	switch {
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, digits = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	if digits == "" || strings.ContainsAny(digits, "+-_") {
		return 0, false
	}
	v, err := strconv.ParseUint(digits, base, 32)
	if err != nil {
		return 0, false
	}
	return v, true
}
