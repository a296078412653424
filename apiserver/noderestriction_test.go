package apiserver

import (
	"net"
	"testing"
)

func TestSpecialAddress(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1": "loopback", "127.0.0.71": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"0.0.0.0": "unspecified", "::": "unspecified",
		"169.254.169.254": "link-local", "fe80::1": "link-local", "224.0.0.1": "link-local", "ff02::1": "link-local",
		"239.1.2.3": "multicast", "ff05::2": "multicast",
		"255.255.255.255": "broadcast",
		"192.0.2.7":       "", "198.51.100.5": "", "2001:db8::5": "", // ordinary node addresses (documentation ranges)
	} {
		if got := specialAddress(net.ParseIP(addr)); got != want {
			t.Errorf("specialAddress(%s) = %q, want %q", addr, got, want)
		}
	}
}
