package network

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// RouteProtocol marks the routes this package makes (rtnetlink's protocol
// field, as routing daemons mark theirs), so that it removes only its own.
const RouteProtocol netlink.RouteProtocol = 77

// Routes keeps, in one network namespace, a route to every other node's
// pod CIDR via that node's address: flannel's host-gw, with no overlay.
type Routes struct {
	h *netlink.Handle
}

// NewRoutes manages routes in the network namespace of the calling thread
// (the kubelet's: its node's).
func NewRoutes() (*Routes, error) {
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	return &Routes{h: h}, nil
}

// Close releases the netlink sockets.
func (r *Routes) Close() { r.h.Close() }

// Sync makes the routes this package owns exactly want (pod CIDR → node
// address): missing ones are added, changed ones replaced, others removed.
// A route whose gateway is not on a network of this node is refused by
// the kernel; the error names it, and the others are still made. A route
// via one of the node's own addresses leads out of that address's link,
// from it: that is how the node routes the service range, whose addresses
// the DNAT rules take over once a connection has a route.
func (r *Routes) Sync(desired map[string]string) error {
	want := make(map[string]string, len(desired))
	for k, v := range desired {
		want[k] = v
	}
	have, err := r.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: RouteProtocol, Table: 254}, netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	own, err := r.ownAddresses()
	if err != nil {
		return err
	}
	var errs []error
	for _, rt := range have {
		if rt.Dst == nil {
			continue
		}
		if gw, ok := want[rt.Dst.String()]; ok && (rt.Gw.Equal(net.ParseIP(gw)) || rt.Gw == nil && rt.Src.Equal(net.ParseIP(gw))) {
			delete(want, rt.Dst.String())
			continue
		}
		if _, ok := want[rt.Dst.String()]; ok {
			continue // replaced below
		}
		if err := r.h.RouteDel(&rt); err != nil {
			errs = append(errs, fmt.Errorf("removing the route to %s: %w", rt.Dst, err))
		}
	}
	for cidr, gw := range want {
		_, dst, err := net.ParseCIDR(cidr)
		ip := net.ParseIP(gw)
		if err != nil || ip == nil {
			errs = append(errs, fmt.Errorf("route to %q via %q: not a CIDR and an address", cidr, gw))
			continue
		}
		route := &netlink.Route{Dst: dst, Gw: ip, Protocol: RouteProtocol, Table: 254}
		if link, ok := own[ip.String()]; ok {
			route.Gw, route.Src, route.LinkIndex, route.Scope = nil, ip, link, netlink.SCOPE_LINK
		}
		if err := r.h.RouteReplace(route); err != nil {
			errs = append(errs, fmt.Errorf("route to %s via %s: %w", cidr, gw, err))
		}
	}
	return errors.Join(errs...)
}

// ownAddresses maps the namespace's IPv4 addresses to their links' indexes.
func (r *Routes) ownAddresses() (map[string]int, error) {
	addrs, err := r.h.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	own := make(map[string]int, len(addrs))
	for _, a := range addrs {
		own[a.IP.String()] = a.LinkIndex
	}
	return own, nil
}
