package test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/clusterdns"
	"minik8s/test/framework"
)

// TestClusterDNS: the cluster DNS answers a Service's name with its
// cluster IP, a headless Service's with its ready pods' addresses, a name
// of the cluster domain that does not exist with NXDOMAIN, AAAA with no
// record, over UDP and TCP, and hands other names to the node's resolver
// (here one the test runs, on loopback).
func TestClusterDNS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := framework.StartAPIServer(t)
	c := s.Client

	upstream := startUpstreamDNS(t, "outside.example.", "127.0.0.9")
	addr := freeUDPAddr(t)
	srv, err := clusterdns.New(cache.NewFactory(c), clusterdns.Config{Address: addr, Upstreams: []string{upstream}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cluster dns: %v", err)
		}
	})

	web, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ServiceSpec{Ports: []api.ServicePort{{Port: 80}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "db"},
		Spec: api.ServiceSpec{ClusterIP: "None", Ports: []api.ServicePort{{Port: 5432}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Endpoints("default").Create(ctx, &api.Endpoints{ObjectMeta: api.ObjectMeta{Name: "db"},
		Subsets: []api.EndpointSubset{{
			Addresses:         []api.EndpointAddress{{IP: "10.42.0.31"}, {IP: "10.42.0.32"}},
			NotReadyAddresses: []api.EndpointAddress{{IP: "10.42.0.33"}},
			Ports:             []api.EndpointPort{{Port: 5432}},
		}}}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		qtype  uint16
		net    string
		rcode  int
		answer []string
	}{
		{"web.default.svc.cluster.local.", dns.TypeA, "udp", dns.RcodeSuccess, []string{web.Spec.ClusterIP}},
		{"WEB.default.svc.cluster.local.", dns.TypeA, "tcp", dns.RcodeSuccess, []string{web.Spec.ClusterIP}},
		{"db.default.svc.cluster.local.", dns.TypeA, "udp", dns.RcodeSuccess, []string{"10.42.0.31", "10.42.0.32"}},
		{"web.default.svc.cluster.local.", dns.TypeAAAA, "udp", dns.RcodeSuccess, nil},
		{"default.svc.cluster.local.", dns.TypeA, "udp", dns.RcodeSuccess, nil},
		{"nothing.default.svc.cluster.local.", dns.TypeA, "udp", dns.RcodeNameError, nil},
		{"web.other.svc.cluster.local.", dns.TypeA, "udp", dns.RcodeNameError, nil},
		{"web.default.svc.cluster.local.default.svc.cluster.local.", dns.TypeA, "udp", dns.RcodeNameError, nil},
		{"outside.example.", dns.TypeA, "udp", dns.RcodeSuccess, []string{"127.0.0.9"}},
		{"outside.example.", dns.TypeA, "tcp", dns.RcodeSuccess, []string{"127.0.0.9"}},
	}
	for _, tc := range cases {
		var got []string
		var rcode int
		// The first answers wait for the informers to see the objects.
		waitUntil(t, 10*time.Second, dns.TypeToString[tc.qtype]+" "+tc.name+" over "+tc.net, func() bool {
			got, rcode = query(t, tc.net, addr, tc.name, tc.qtype)
			return rcode == tc.rcode && equalSets(got, tc.answer)
		})
	}
}

func query(t *testing.T, network, addr, name string, qtype uint16) ([]string, int) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	resp, _, err := (&dns.Client{Net: network, Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Logf("%s %s: %v", network, name, err)
		return nil, -1
	}
	var out []string
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out, resp.Rcode
}

func equalSets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		if seen[x] == 0 {
			return false
		}
		seen[x]--
	}
	return true
}

// freeUDPAddr is a loopback address whose UDP and TCP ports were free.
func freeUDPAddr(t *testing.T) string {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		pc, err := net.ListenPacket("udp", addr)
		l.Close()
		if err == nil {
			pc.Close()
			return addr
		}
	}
	t.Fatal("no free port for both UDP and TCP")
	return ""
}

// startUpstreamDNS answers name with ip over UDP and TCP on loopback.
func startUpstreamDNS(t *testing.T, name, ip string) string {
	t.Helper()
	addr := freeUDPAddr(t)
	h := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		if req.Question[0].Name == name {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(ip)})
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	for _, network := range []string{"udp", "tcp"} {
		started := make(chan error, 1)
		srv := &dns.Server{Addr: addr, Net: network, Handler: h, NotifyStartedFunc: func() { started <- nil }}
		go func() {
			if err := srv.ListenAndServe(); err != nil {
				started <- err
			}
		}()
		if err := <-started; err != nil {
			t.Fatalf("upstream dns on %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return addr
}
