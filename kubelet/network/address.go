package network

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// DefaultAddress is the node's address as k3s picks it: the first IPv4
// address of the link the default route leaves through, else of the first
// link that is up and not loopback. Other nodes route this node's pods
// through it, so a loopback address will not do.
func DefaultAddress() (string, error) {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return "", fmt.Errorf("listing routes: %w", err)
	}
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() != "0.0.0.0/0" || r.LinkIndex == 0 {
			continue
		}
		if l, err := netlink.LinkByIndex(r.LinkIndex); err == nil {
			if ip := firstAddress(l); ip != "" {
				return ip, nil
			}
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		return "", fmt.Errorf("listing links: %w", err)
	}
	for _, l := range links {
		if l.Attrs().Flags&net.FlagUp == 0 || l.Attrs().Flags&net.FlagLoopback != 0 {
			continue
		}
		if ip := firstAddress(l); ip != "" {
			return ip, nil
		}
	}
	return "", errors.New("no link but loopback has an IPv4 address")
}

func firstAddress(l netlink.Link) string {
	addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() && !a.IP.IsLinkLocalUnicast() {
			return a.IP.String()
		}
	}
	return ""
}
