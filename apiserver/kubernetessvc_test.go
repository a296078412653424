package apiserver

import (
	"net"
	"slices"
	"testing"

	"minik8s/pkg/errdefs"
)

// Addresses are only resolved here, never reached: documentation ones
// (RFC 5737) stand for a machine's.
func TestResolveAdvertiseAddress(t *testing.T) {
	for _, tc := range []struct {
		name, advertise, secure, want string
		invalid                       bool
	}{
		{name: "given", advertise: "192.0.2.1", secure: "0.0.0.0:6443", want: "192.0.2.1"},
		{name: "given, with a bound address", advertise: "192.0.2.1", secure: "127.0.0.1:6443", want: "192.0.2.1"},
		{name: "the bound address", secure: "192.0.2.3:6443", want: "192.0.2.3"},
		{name: "a bound loopback address, reached nowhere else", secure: "127.0.0.1:6443", want: "127.0.0.1"},
		{name: "no secure port", want: ""},
		{name: "every address: the default route's (any but unspecified)", secure: "0.0.0.0:6443", want: "*"},
		{name: "every address, unnamed", secure: ":6443", want: "*"},
		{name: "unspecified given", advertise: "0.0.0.0", invalid: true},
		{name: "not an address", advertise: "node-1", invalid: true},
		{name: "IPv6", advertise: "fd00::1", invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{AdvertiseAddress: tc.advertise, SecureAddress: tc.secure}
			err := c.resolveAdvertiseAddress()
			switch {
			case tc.invalid:
				if !errdefs.IsInvalid(err) {
					t.Errorf("%v, want invalid", err)
				}
			case err != nil:
				t.Errorf("%v", err)
			case tc.want == "*":
				if ip := net.ParseIP(c.AdvertiseAddress); ip == nil || ip.IsUnspecified() {
					t.Errorf("advertised %q, want an address", c.AdvertiseAddress)
				}
			case c.AdvertiseAddress != tc.want:
				t.Errorf("advertised %q, want %q", c.AdvertiseAddress, tc.want)
			}
		})
	}
}

// TestServingNamesForPods: what a client in a pod checks (the kubernetes
// Service's address and names) and the advertised address are in the
// serving certificate.
func TestServingNamesForPods(t *testing.T) {
	dns, ips := servingNames(&Config{ServiceCIDR: "127.43.0.0/16", AdvertiseAddress: "192.0.2.1"})
	for _, name := range []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
		if !slices.Contains(dns, name) {
			t.Errorf("names %v lack %s", dns, name)
		}
	}
	for _, ip := range []string{"127.43.0.1", "192.0.2.1", "127.0.0.1"} {
		if !slices.ContainsFunc(ips, net.ParseIP(ip).Equal) {
			t.Errorf("addresses %v lack %s", ips, ip)
		}
	}
}
