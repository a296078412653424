// Package egress guards the requests the platform makes on a caller's
// behalf, to a URL the caller names or carrying the caller's bytes
// (callbacks today; function outputs and webhooks later). Such a request
// must never reach an address that trusts the platform: the apiserver's
// local port (which acts as the admin), its secure port, kubelets,
// runners, etcd, NATS, this machine's loopback and its own addresses, the
// nodes' addresses, link-local and cloud metadata addresses, and the
// cluster's pod and service ranges, unless the operator opened them.
//
// The check that counts is made on the address actually connected to
// (net.Dialer's Control), so names that resolve inward, DNS rebinding,
// IPv4-mapped IPv6 and the odd spellings of IPv4 all end at the same
// test; CheckURL refuses up front what can be told from the URL alone,
// so that a caller learns at once.
package egress

import (
	"fmt"
	"net/netip"
	"strings"

	"minik8s/pkg/errdefs"
)

// Range is a set of addresses and what they are, for the error that
// refuses them ("the cluster's pod range (--cluster-cidr)").
type Range struct {
	Prefix netip.Prefix
	What   string
}

// Source reports addresses learned while running (the nodes', this
// machine's): it is asked at each check, so what it says is current. An
// error refuses the address being checked: the guard fails closed.
type Source func() ([]Range, error)

// Config configures a Guard.
type Config struct {
	// Allow lists the ranges the operator opens (--egress-allow-cidrs):
	// an address in one is allowed whatever else it is, except an
	// unspecified, multicast or broadcast address, which is never a
	// receiver.
	Allow []netip.Prefix
	// Deny lists ranges refused besides the built-in classes, such as the
	// cluster's pod and service ranges from the configuration.
	Deny []Range
	// Sources are consulted at each check.
	Sources []Source
}

// Guard decides which addresses may receive a caller's bytes.
type Guard struct {
	allow   []netip.Prefix
	deny    []Range
	sources []Source
}

// New returns a guard; a nil *Guard refuses only the built-in classes.
func New(cfg Config) *Guard {
	g := &Guard{sources: append([]Source(nil), cfg.Sources...)}
	for _, p := range cfg.Allow {
		g.allow = append(g.allow, normalize(p))
	}
	for _, r := range cfg.Deny {
		g.deny = append(g.deny, Range{Prefix: normalize(r.Prefix), What: r.What})
	}
	return g
}

// Allowed lists the ranges the operator opened.
func (g *Guard) Allowed() []netip.Prefix {
	if g == nil {
		return nil
	}
	return append([]netip.Prefix(nil), g.allow...)
}

// RefusedError is the guard's refusal of an address. It wraps
// errdefs.ErrForbidden.
type RefusedError struct {
	Addr   netip.Addr
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is %s: the platform sends no caller's request there (an operator may open a range with --egress-allow-cidrs)", e.Addr, e.Reason)
}

func (e *RefusedError) Unwrap() error { return errdefs.ErrForbidden }

// Check returns nil when addr may receive a caller's bytes, else a
// *RefusedError saying what the address is.
func (g *Guard) Check(addr netip.Addr) error {
	if !addr.IsValid() {
		return &RefusedError{Addr: addr, Reason: "not an address"}
	}
	addr = addr.WithZone("").Unmap()
	if why := never(addr); why != "" {
		return &RefusedError{Addr: addr, Reason: why}
	}
	if g.allows(addr) {
		return nil
	}
	if v4, kind, ok := embeddedIPv4(addr); ok {
		if err := g.Check(v4); err != nil {
			return &RefusedError{Addr: addr, Reason: fmt.Sprintf("%s address carrying %s, which is refused", kind, v4)}
		}
	}
	if why := builtIn(addr); why != "" {
		return &RefusedError{Addr: addr, Reason: why}
	}
	if g == nil {
		return nil
	}
	for _, r := range g.deny {
		if r.Prefix.Contains(addr) {
			return &RefusedError{Addr: addr, Reason: r.What}
		}
	}
	for _, src := range g.sources {
		ranges, err := src()
		if err != nil {
			return &RefusedError{Addr: addr, Reason: fmt.Sprintf("not known to be outside the cluster (%v)", err)}
		}
		for _, r := range ranges {
			if normalize(r.Prefix).Contains(addr) {
				return &RefusedError{Addr: addr, Reason: r.What}
			}
		}
	}
	return nil
}

func (g *Guard) allows(addr netip.Addr) bool {
	if g == nil {
		return false
	}
	for _, p := range g.allow {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// normalize makes an IPv4-mapped prefix (::ffff:10.0.0.0/104) the IPv4
// one it stands for, and drops host bits, so Contains sees what a dial
// sees.
func normalize(p netip.Prefix) netip.Prefix {
	a := p.Addr().WithZone("")
	if a.Is4In6() {
		bits := max(p.Bits()-96, 0)
		return netip.PrefixFrom(a.Unmap(), bits).Masked()
	}
	return netip.PrefixFrom(a, p.Bits()).Masked()
}

// ParseCIDRs reads a comma-separated list of CIDRs or single addresses
// (a single address is its /32 or /128), as --egress-allow-cidrs takes.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, errdefs.Invalid("egress-allow-cidrs", "%q is not an address or CIDR range", f)
			}
			out = append(out, normalize(netip.PrefixFrom(a, a.BitLen())))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, errdefs.Invalid("egress-allow-cidrs", "%q is not a CIDR range: %v", f, err)
		}
		out = append(out, normalize(p))
	}
	return out, nil
}

// CIDRs is a flag.Value of ParseCIDRs's lists, for the mains.
type CIDRs []netip.Prefix

func (c *CIDRs) String() string {
	if c == nil {
		return ""
	}
	s := make([]string, len(*c))
	for i, p := range *c {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// Set adds the ranges of a comma-separated list; the flag may be repeated.
func (c *CIDRs) Set(s string) error {
	p, err := ParseCIDRs(s)
	if err != nil {
		return err
	}
	*c = append(*c, p...)
	return nil
}
