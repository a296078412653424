package egress

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"minik8s/pkg/errdefs"
)

func mustPrefixes(t *testing.T, s string) []netip.Prefix {
	t.Helper()
	p, err := ParseCIDRs(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// clusterGuard stands for a runner's guard: the operator opened
// 127.0.0.2/32, the configuration names the pod and service ranges, and
// a source reports a node's address and an address of this machine.
func clusterGuard(t *testing.T) *Guard {
	return New(Config{
		Allow: mustPrefixes(t, "127.0.0.2/32,::ffff:198.18.0.0/112"),
		Deny: []Range{
			{netip.MustParsePrefix("10.42.0.0/16"), "the cluster's pod range"},
			{netip.MustParsePrefix("10.43.0.0/16"), "the cluster's service range"},
		},
		Sources: []Source{func() ([]Range, error) {
			return []Range{
				{netip.MustParsePrefix("192.0.2.10/32"), "node n1's address"},
				{netip.MustParsePrefix("198.51.100.7/32"), "an address of this machine"},
				{netip.MustParsePrefix("2001:db8::7/128"), "an address of this machine"},
			}, nil
		}},
	})
}

func TestCheck(t *testing.T) {
	g := clusterGuard(t)
	tests := []struct {
		addr string
		want string // "" allowed, else a part of the refusal
	}{
		// loopback, in every family and spelling a dial sees
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:7f00:1", "loopback"},
		// opened by the operator, mapped or not
		{"127.0.0.2", ""},
		{"::ffff:127.0.0.2", ""},
		{"198.18.0.9", ""},
		{"127.0.0.3", "loopback"},
		// link-local and cloud metadata
		{"169.254.169.254", "metadata"},
		{"::ffff:169.254.169.254", "metadata"},
		{"fd00:ec2::254", "metadata"},
		{"100.100.100.200", "metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		// unspecified, multicast, broadcast
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.1.2.3", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		// the cluster's ranges and addresses
		{"10.42.3.4", "pod range"},
		{"::ffff:10.42.3.4", "pod range"},
		{"10.43.0.1", "service range"},
		{"192.0.2.10", "node n1"},
		{"198.51.100.7", "this machine"},
		{"2001:db8::7", "this machine"},
		// IPv6 that carries a refused IPv4 address
		{"64:ff9b::7f00:1", "NAT64"},
		{"64:ff9b:1::a9fe:a9fe", "NAT64"},
		{"2002:7f00:1::1", "6to4"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::10.42.0.1", "IPv4-compatible"},
		// the rest of the world, private networks included
		{"8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
		{"2001:4860:4860::8888", ""},
		{"10.1.2.3", ""},
		{"172.16.0.1", ""},
		{"192.168.1.1", ""},
		{"192.0.2.11", ""},
		{"fd12::1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := g.Check(netip.MustParseAddr(tt.addr))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("allowed, want refused as %s", tt.want)
			}
			if _, ok := Refused(err); !ok || !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q (%T), want a RefusedError (forbidden) saying %q", err, err, tt.want)
			}
		})
	}
}

func TestCheckNeverOpened(t *testing.T) {
	// Opening everything opens loopback, but an unspecified, multicast or
	// broadcast address is never a receiver.
	g := New(Config{Allow: mustPrefixes(t, "0.0.0.0/0,::/0")})
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "::1": true, "169.254.169.254": true, "8.8.8.8": true,
		"0.0.0.0": false, "::": false, "224.0.0.1": false, "ff02::1": false, "255.255.255.255": false,
	} {
		if err := g.Check(netip.MustParseAddr(addr)); (err == nil) != want {
			t.Errorf("%s: error %v, want allowed=%v", addr, err, want)
		}
	}
}

func TestCheckFailsClosed(t *testing.T) {
	g := New(Config{Sources: []Source{func() ([]Range, error) { return nil, errors.New("no nodes yet") }}})
	err := g.Check(netip.MustParseAddr("8.8.8.8"))
	if _, ok := Refused(err); !ok || !strings.Contains(err.Error(), "no nodes yet") {
		t.Fatalf("error %v, want a refusal naming the source's error", err)
	}
}

func TestNilGuard(t *testing.T) {
	var g *Guard
	if err := g.Check(netip.MustParseAddr("127.0.0.1")); err == nil {
		t.Error("a nil guard allowed loopback")
	}
	if err := g.Check(netip.MustParseAddr("8.8.8.8")); err != nil {
		t.Errorf("a nil guard refused 8.8.8.8: %v", err)
	}
}

func TestLiteral(t *testing.T) {
	tests := []struct {
		host string
		want string // "" not a literal
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0X7F.1", "127.0.0.1"},
		{"0x7f.0.0.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0177.0.0.01", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"0xa9.0xfe.0xa9.0xfe", "169.254.169.254"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"::1", "::1"},
		{"fe80::1%eth0", "fe80::1%eth0"},
		{"example.com", ""},
		{"1.2.3.4.5", ""},
		{"256.1.1.1", ""},
		{"127.0.0.256", ""},
		{"4294967296", ""},
		{"08", ""},
		{"0x", ""},
		{"1e3", ""},
		{"1..2", ""},
		{"", ""},
		{"+1", ""},
	}
	for _, tt := range tests {
		got, ok := Literal(tt.host)
		if tt.want == "" {
			if ok {
				t.Errorf("Literal(%q) = %s, want not a literal", tt.host, got)
			}
			continue
		}
		if !ok || got != netip.MustParseAddr(tt.want) {
			t.Errorf("Literal(%q) = %s, %v; want %s", tt.host, got, ok, tt.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	g := clusterGuard(t)
	tests := []struct {
		url  string
		want string // "" accepted, else a part of the error
	}{
		{"http://127.0.0.1:8080/api/v1/namespaces/other/configmaps", "loopback"},
		{"http://127.1:8080/", "loopback"},
		{"http://2130706433:8080/", "loopback"},
		{"http://0x7f.1/", "loopback"},
		{"http://0177.0.0.1/", "loopback"},
		{"http://127.0.0.1.:8080/", "loopback"},
		{"http://[::ffff:127.0.0.1]:8080/", "loopback"},
		{"http://[::1]:6443/", "loopback"},
		{"http://0.0.0.0:8080/", "unspecified"},
		{"http://169.254.169.254/latest/meta-data/", "metadata"},
		{"http://[fe80::1%25eth0]:10250/", "link-local"},
		{"http://10.43.0.1/", "service range"},
		{"http://192.0.2.10:10250/pods", "node n1"},
		{"ftp://example.com/x", "http and https"},
		{"not a url", "http and https"},
		{"//example.com/x", "http and https"},
		{"http://user:secret@example.com/", "user info"},
		{"http://example.com@127.0.0.2/", "user info"},
		{"http:///path", "no host"},
		{"http://%zz/", "not a URL"},
		{"https://example.com/cb", ""},
		{"https://localhost:6443/", ""}, // a name: the dial judges it
		{"http://8.8.8.8:9000/cb?x=1", ""},
		{"http://127.0.0.2:9000/cb", ""},
		{"http://[::ffff:127.0.0.2]:9000/cb", ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := g.CheckURL(tt.url)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	got, err := ParseCIDRs(" 127.0.0.2 , 10.1.2.3/8,::ffff:127.0.0.3/128,fd00::/8,")
	if err != nil {
		t.Fatal(err)
	}
	want := "127.0.0.2/32,10.0.0.0/8,127.0.0.3/32,fd00::/8"
	if s := (*CIDRs)(&got).String(); s != want {
		t.Errorf("ParseCIDRs = %s, want %s", s, want)
	}
	for _, bad := range []string{"10.0.0.0/33", "nope", "10.0.0.0/8/1"} {
		if _, err := ParseCIDRs(bad); !errdefs.IsInvalid(err) || !strings.Contains(err.Error(), "egress-allow-cidrs") {
			t.Errorf("ParseCIDRs(%q): %v, want invalid naming the flag", bad, err)
		}
	}
}

// listen starts an HTTP server on addr (a loopback address of the test)
// that counts its requests.
func listen(t *testing.T, addr string, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	n := &atomic.Int32{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, n
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func TestClient(t *testing.T) {
	inside, insideHits := listen(t, "127.0.0.1", ok)
	_, port, _ := net.SplitHostPort(inside.Listener.Addr().String())
	receiver, _ := listen(t, "127.0.0.2", ok)
	redirector, _ := listen(t, "127.0.0.2", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inside.URL+"/api/v1/namespaces/other/configmaps", http.StatusTemporaryRedirect)
	})
	c := New(Config{Allow: mustPrefixes(t, "127.0.0.2/32"), Sources: []Source{OwnAddresses}}).Client()

	for _, url := range []string{
		inside.URL,                 // the address itself
		"http://localhost:" + port, // a name that resolves inward
		"http://[::ffff:127.0.0.1]:" + port + "/", // IPv4-mapped IPv6
	} {
		resp, err := c.Post(url, "application/octet-stream", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Errorf("POST %s: %s, want refused at the dial", url, resp.Status)
			continue
		}
		if _, ok := Refused(err); !ok {
			t.Errorf("POST %s: %v, want the guard's refusal", url, err)
		}
	}

	resp, err := c.Post(receiver.URL, "application/octet-stream", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("POST to the opened receiver: %v", err)
	}
	resp.Body.Close()

	// A receiver's redirect is the answer, not followed.
	resp, err = c.Post(redirector.URL, "application/octet-stream", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("POST to the redirector: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("redirector answered %s, want its 307 as the answer", resp.Status)
	}
	if n := insideHits.Load(); n != 0 {
		t.Errorf("the inward server got %d requests, want none", n)
	}
	if c.Transport.(*http.Transport).Proxy != nil {
		t.Error("the transport takes a proxy: a proxy would dial in the guard's place")
	}
}

func TestOwnAddresses(t *testing.T) {
	own, err := OwnAddresses()
	if err != nil {
		t.Fatal(err)
	}
	if len(own) == 0 {
		t.Fatal("no address of this machine found")
	}
	// Each one, loopback or not, is refused.
	g := New(Config{Sources: []Source{OwnAddresses}})
	for _, r := range own {
		err := g.Check(r.Prefix.Addr())
		if err == nil {
			t.Errorf("%s, an address of this machine, is allowed", r.Prefix.Addr())
		}
	}
}
