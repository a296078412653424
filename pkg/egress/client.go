package egress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Dialer returns a dialer that checks, before connecting, the very
// address each attempt connects to: whatever a name resolved to (at this
// dial: DNS rebinding does not help), after the resolver read any odd
// spelling, IPv4-mapped IPv6 as the IPv4 it is.
func (g *Guard) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.control}
}

// control is net.Dialer's Control: it runs after the socket is made and
// before it connects.
func (g *Guard) control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("egress: %s connections are not made", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress: dialing %q: %w", address, err)
	}
	return g.Check(ap.Addr())
}

// Transport returns an http.Transport whose every connection passes the
// guard. It uses no proxy (an environment proxy would dial in the
// guard's place and reach what the guard refuses).
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           g.Dialer(10 * time.Second).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
	}
}

// Client returns an http.Client on Transport that follows no redirect: a
// 3xx answer is the answer (a receiver may not send the platform's
// request on to an address the caller could not name).
func (g *Guard) Client() *http.Client {
	return &http.Client{
		Transport:     g.Transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Refused returns the guard's refusal err carries, if any.
func Refused(err error) (*RefusedError, bool) {
	var re *RefusedError
	ok := errors.As(err, &re)
	return re, ok
}
