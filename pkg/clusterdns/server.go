// Package clusterdns is the cluster's DNS server: it answers
// NAME.NS.svc.DOMAIN with the Service's cluster IP (the ready pods'
// addresses for a headless Service) from informers, answers every other
// name under DOMAIN that does not exist with NXDOMAIN at once, and
// forwards the rest to the node's own resolvers. Every node runs one, at an
// address its pods reach (its pod bridge's gateway).
package clusterdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
	log "github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
)

// DefaultDomain is the cluster's DNS domain, as Kubernetes names it.
const DefaultDomain = "cluster.local"

// ttl is short: a Service's address is fixed for its life, but a headless
// Service's pods come and go.
const ttl = 5

// Config is one DNS server.
type Config struct {
	// Address is where it serves, UDP and TCP ("10.42.0.1:53"). The
	// address need not exist yet (the bridge holding it comes with the
	// first pod): sockets are bound with IP_FREEBIND.
	Address string
	// Domain is the cluster domain (DefaultDomain).
	Domain string
	// Upstreams answer the names outside Domain ("ip:port"); none means
	// those get SERVFAIL.
	Upstreams []string
}

// Server answers the cluster's names.
type Server struct {
	cfg       Config
	zone      string // "svc.cluster.local."
	domain    string // "cluster.local."
	services  *cache.Informer[api.Service, *api.Service]
	endpoints *cache.Informer[api.Endpoints, *api.Endpoints]
	client    *dns.Client
}

// New returns a server fed by the factory's informers.
func New(f *cache.Factory, cfg Config) (*Server, error) {
	if cfg.Domain == "" {
		cfg.Domain = DefaultDomain
	}
	if _, ok := dns.IsDomainName(cfg.Domain); !ok {
		return nil, fmt.Errorf("clusterdns: %q is not a domain name", cfg.Domain)
	}
	if _, _, err := net.SplitHostPort(cfg.Address); err != nil {
		return nil, fmt.Errorf("clusterdns: address %q: %w", cfg.Address, err)
	}
	domain := dns.Fqdn(strings.ToLower(cfg.Domain))
	return &Server{cfg: cfg, domain: domain, zone: "svc." + domain,
		services: f.Services(), endpoints: f.Endpoints(),
		client: &dns.Client{Timeout: 2 * time.Second}}, nil
}

// UpstreamsFromResolvConf lists the nameservers of a resolv.conf file as
// "ip:port"; a missing file gives none.
func UpstreamsFromResolvConf(path string) []string {
	cc, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range cc.Servers {
		out = append(out, net.JoinHostPort(s, cc.Port))
	}
	return out
}

// freeBind lets a socket bind an address the node does not hold yet.
var freeBind = net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
	}); err != nil {
		return err
	}
	return serr
}}

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	s.services.Start(ctx)
	s.endpoints.Start(ctx)
	pc, err := freeBind.ListenPacket(ctx, "udp", s.cfg.Address)
	if err != nil {
		return fmt.Errorf("clusterdns: %w", err)
	}
	l, err := freeBind.Listen(ctx, "tcp", s.cfg.Address)
	if err != nil {
		pc.Close()
		return fmt.Errorf("clusterdns: %w", err)
	}
	servers := []*dns.Server{{PacketConn: pc, Handler: s}, {Listener: l, Handler: s}}
	errc := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { errc <- srv.ActivateAndServe() }()
	}
	log.WithFields(log.Fields{"address": s.cfg.Address, "domain": s.cfg.Domain, "upstreams": s.cfg.Upstreams}).Info("cluster dns serving")
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
	}
	for _, srv := range servers {
		_ = srv.Shutdown()
	}
	return err
}

// ServeDNS answers one query.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	if len(req.Question) != 1 {
		m.SetRcode(req, dns.RcodeFormatError)
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	if name != s.domain && !strings.HasSuffix(name, "."+s.domain) {
		s.forward(w, req)
		return
	}
	m.SetReply(req)
	m.Authoritative = true
	ips, exists := s.lookup(name)
	switch {
	case !exists:
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{s.soa()}
	case q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY:
		for _, ip := range ips {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: ip})
		}
	default:
		// The name exists but has no record of that type (AAAA on an
		// IPv4 cluster): NOERROR with no answer, so resolvers stop.
		m.Ns = []dns.RR{s.soa()}
	}
	_ = w.WriteMsg(m)
}

// lookup resolves a name under the cluster domain: NAME.NS.svc.DOMAIN is
// a Service, HOST.NAME.NS.svc.DOMAIN a headless Service's pod; DOMAIN, svc.DOMAIN and NS.svc.DOMAIN exist (with no address)
// while a Service is in NS; anything else does not.
func (s *Server) lookup(name string) ([]net.IP, bool) {
	if name == s.domain || name == s.zone {
		return nil, true
	}
	rest, ok := strings.CutSuffix(name, "."+s.zone)
	if !ok {
		return nil, false
	}
	labels := strings.Split(rest, ".")
	switch len(labels) {
	case 1:
		return nil, len(s.services.Lister().ListNamespace(labels[0], nil)) > 0
	case 2:
		svc, ok := s.services.Lister().Get(labels[1], labels[0])
		if !ok {
			return nil, false
		}
		if ip := net.ParseIP(svc.Spec.ClusterIP).To4(); ip != nil {
			return []net.IP{ip}, true
		}
		return s.readyAddresses(svc.Namespace, svc.Name), true
	case 3:
		return s.hostAddress(labels[2], labels[1], labels[0])
	}
	return nil, false
}

// hostAddress resolves HOST.NAME.NS.svc.DOMAIN, as Kubernetes' DNS does
// for a headless Service: the address of its endpoint of that host name
// (a pod whose hostname is HOST and subdomain NAME, a StatefulSet's), the
// not-ready ones too when the Service publishes them.
func (s *Server) hostAddress(namespace, name, host string) ([]net.IP, bool) {
	svc, ok := s.services.Lister().Get(namespace, name)
	if !ok || net.ParseIP(svc.Spec.ClusterIP) != nil {
		return nil, false
	}
	ep, ok := s.endpoints.Lister().Get(namespace, name)
	if !ok {
		return nil, false
	}
	for _, sub := range ep.Subsets {
		addrs := sub.Addresses
		if svc.Spec.PublishNotReadyAddresses {
			addrs = append(addrs[:len(addrs):len(addrs)], sub.NotReadyAddresses...)
		}
		for _, a := range addrs {
			if ip := net.ParseIP(a.IP).To4(); ip != nil && strings.EqualFold(a.Hostname, host) {
				return []net.IP{ip}, true
			}
		}
	}
	return nil, false
}

// readyAddresses are the distinct ready pod addresses of a headless Service.
func (s *Server) readyAddresses(namespace, name string) []net.IP {
	ep, ok := s.endpoints.Lister().Get(namespace, name)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []net.IP
	for _, sub := range ep.Subsets {
		for _, a := range sub.Addresses {
			if ip := net.ParseIP(a.IP).To4(); ip != nil && !seen[a.IP] {
				seen[a.IP] = true
				out = append(out, ip)
			}
		}
	}
	return out
}

func (s *Server) soa() dns.RR {
	return &dns.SOA{Hdr: dns.RR_Header{Name: s.domain, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: ttl},
		Ns: "ns.dns." + s.domain, Mbox: "hostmaster." + s.domain, Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: ttl}
}

// forward asks the node's resolvers in turn, answering SERVFAIL when none
// answers.
func (s *Server) forward(w dns.ResponseWriter, req *dns.Msg) {
	network := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		network = "tcp"
	}
	c := *s.client
	c.Net = network
	var errs []error
	for _, up := range s.cfg.Upstreams {
		resp, _, err := c.Exchange(req, up)
		if err == nil {
			_ = w.WriteMsg(resp)
			return
		}
		errs = append(errs, err)
	}
	log.WithError(errors.Join(errs...)).WithField("name", req.Question[0].Name).Debug("cluster dns: no upstream answered")
	m := new(dns.Msg)
	m.SetRcode(req, dns.RcodeServerFailure)
	_ = w.WriteMsg(m)
}
