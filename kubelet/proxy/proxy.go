// Package proxy is the kubelet's service proxy: for every Service port it
// listens on clusterIP:port and balances connections over the ready
// endpoints, following Services and Endpoints by watch. Listeners use
// SO_REUSEPORT, so the proxies of several kubelets on one machine share the
// cluster IPs and a Service answers while any of them lives.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	log "github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
)

// dialTimeout bounds a connection attempt to one endpoint before the next is tried.
const dialTimeout = 2 * time.Second

// Proxy serves every Service's cluster IP.
type Proxy struct {
	services  *cache.Informer[api.Service, *api.Service]
	endpoints *cache.Informer[api.Endpoints, *api.Endpoints]

	changed chan struct{}

	mu        sync.Mutex
	listeners map[string]*listener // "ip:port" → listener
}

// New returns a proxy fed by informers of the given factory.
func New(f *cache.Factory) *Proxy {
	return &Proxy{
		services:  f.Services(),
		endpoints: f.Endpoints(),
		changed:   make(chan struct{}, 1),
		listeners: map[string]*listener{},
	}
}

// NewFromClient returns a proxy with its own informers.
func NewFromClient(c *client.Client) *Proxy {
	return New(cache.NewFactory(c))
}

func (p *Proxy) kick() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Run serves until ctx ends; it starts the informers it was given if they
// are not running yet.
func (p *Proxy) Run(ctx context.Context) error {
	p.services.AddEventHandler(cache.Handler[*api.Service]{
		OnAdd: func(*api.Service) { p.kick() }, OnUpdate: func(_, _ *api.Service) { p.kick() }, OnDelete: func(*api.Service) { p.kick() },
	})
	p.services.Start(ctx)
	p.endpoints.Start(ctx)
	defer p.closeAll()
	// Resync now and then even without events: a listener whose bind
	// failed (an address not yet free) is retried.
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		if p.services.HasSynced() {
			p.sync(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.changed:
		case <-t.C:
		}
	}
}

// sync opens a listener for every Service port and closes the others.
func (p *Proxy) sync(ctx context.Context) {
	want := map[string]backendKey{}
	for _, svc := range p.services.Lister().List(nil) {
		ip := svc.Spec.ClusterIP
		if ip == "" || ip == "None" || net.ParseIP(ip) == nil {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			addr := net.JoinHostPort(ip, strconv.Itoa(int(sp.Port)))
			want[addr] = backendKey{namespace: svc.Namespace, name: svc.Name, port: sp}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, l := range p.listeners {
		if bk, ok := want[addr]; !ok || bk != l.backend.Load().(backendKey) {
			if ok {
				// Same address, another service or port: retarget in place.
				l.backend.Store(bk)
				continue
			}
			l.close()
			delete(p.listeners, addr)
		}
	}
	for addr, bk := range want {
		if _, ok := p.listeners[addr]; ok {
			continue
		}
		l, err := p.listen(ctx, addr, bk)
		if err != nil {
			log.WithError(err).WithField("address", addr).Warn("proxy: cannot listen for service")
			continue
		}
		p.listeners[addr] = l
	}
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, l := range p.listeners {
		l.close()
		delete(p.listeners, addr)
	}
}

// backendKey names the service port a listener serves.
type backendKey struct {
	namespace, name string
	port            api.ServicePort
}

type listener struct {
	ln      net.Listener
	backend atomic.Value // backendKey
	next    atomic.Uint64
	cancel  context.CancelFunc
}

func (l *listener) close() {
	l.cancel()
	l.ln.Close()
}

// listenConfig sets SO_REUSEPORT so that proxies on one machine share addresses.
var listenConfig = net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); serr != nil {
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}}

func (p *Proxy) listen(ctx context.Context, addr string, bk backendKey) (*listener, error) {
	ln, err := listenConfig.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(ctx)
	l := &listener{ln: ln, cancel: cancel}
	l.backend.Store(bk)
	go p.accept(lctx, l)
	log.WithFields(log.Fields{"address": addr, "service": bk.namespace + "/" + bk.name}).Info("proxy: serving service")
	return l, nil
}

func (p *Proxy) accept(ctx context.Context, l *listener) {
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			log.WithError(err).Warn("proxy: accept failed")
			time.Sleep(50 * time.Millisecond)
			continue
		}
		go p.serve(ctx, l, conn)
	}
}

// serve connects a client to one ready endpoint, trying the others when
// one refuses, and copies both ways until both sides are done.
func (p *Proxy) serve(ctx context.Context, l *listener, conn net.Conn) {
	defer conn.Close()
	bk := l.backend.Load().(backendKey)
	ep, _ := p.endpoints.Lister().Get(bk.namespace, bk.name)
	targets := Targets(ep, bk.port)
	if len(targets) == 0 {
		log.WithField("service", bk.namespace+"/"+bk.name).Debug("proxy: no ready endpoint")
		return
	}
	start := int(l.next.Add(1) % uint64(len(targets)))
	var upstream net.Conn
	for i := range targets {
		t := targets[(start+i)%len(targets)]
		d := net.Dialer{Timeout: dialTimeout}
		c, err := d.DialContext(ctx, "tcp", t)
		if err == nil {
			upstream = c
			break
		}
		log.WithError(err).WithField("endpoint", t).Debug("proxy: endpoint refused, trying the next")
	}
	if upstream == nil {
		return
	}
	defer upstream.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(upstream, conn)
	go pipe(conn, upstream)
	select {
	case <-done:
		<-done
	case <-ctx.Done():
	}
}

// Targets lists "ip:port" of the ready endpoints of a service port.
func Targets(ep *api.Endpoints, sp api.ServicePort) []string {
	if ep == nil {
		return nil
	}
	var out []string
	for _, s := range ep.Subsets {
		if !subsetServes(s, sp, len(ep.Subsets)) {
			continue
		}
		for _, a := range s.Addresses {
			port := a.Port
			if port == 0 {
				port = subsetPort(s, sp)
			}
			if port == 0 {
				continue
			}
			out = append(out, net.JoinHostPort(a.IP, strconv.Itoa(int(port))))
		}
	}
	return out
}

// subsetServes says whether a subset holds the endpoints of a service port:
// its ports name it (by name or number), or it is the only subset.
func subsetServes(s api.EndpointSubset, sp api.ServicePort, subsets int) bool {
	for _, ep := range s.Ports {
		if (sp.Name != "" && ep.Name == sp.Name) || (sp.Name == "" && (ep.Name == "" || ep.Port == sp.Port)) {
			return true
		}
	}
	return len(s.Ports) == 0 || subsets == 1
}

// subsetPort is the endpoint port of a subset when addresses carry none.
func subsetPort(s api.EndpointSubset, sp api.ServicePort) int32 {
	for _, ep := range s.Ports {
		if ep.Name == sp.Name {
			return ep.Port
		}
	}
	if n, err := strconv.Atoi(string(sp.TargetPort)); err == nil {
		return int32(n)
	}
	return 0
}

// String describes what the proxy serves (for logs and tests).
func (p *Proxy) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("proxy serving %d addresses", len(p.listeners))
}
