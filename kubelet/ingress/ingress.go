// Package ingress is the kubelet's ingress controller (minik8s.io/ingress,
// the class minik8s makes and the default): every node serves every
// Ingress of that class, or of none, on its address at an HTTP and an
// HTTPS port, as k3s's Traefik does through its service load balancer. A
// request goes straight to a ready endpoint of the backend Service (no
// second hop through the Service's cluster IP), chosen in turn.
package ingress

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/pki"
	"minik8s/pkg/wait"
)

// Config says where a node serves Ingresses.
type Config struct {
	// Address is the node's address the ports listen on.
	Address string
	// HTTPPort and HTTPSPort: 0 serves none.
	HTTPPort, HTTPSPort int
	// Refresh is how often TLS Secrets are read again (a renewed
	// certificate is served within it); default 30 s.
	Refresh time.Duration
}

// Controller serves the Ingresses.
type Controller struct {
	cfg       Config
	ingresses *cache.Informer[api.Ingress, *api.Ingress]
	classes   *cache.Informer[api.IngressClass, *api.IngressClass]
	services  *cache.Informer[api.Service, *api.Service]
	endpoints *cache.Informer[api.Endpoints, *api.Endpoints]
	secrets   secretGetter

	routes    atomic.Pointer[table]
	certs     atomic.Pointer[certs]
	fallback  tls.Certificate // served to a name no Ingress has a certificate for
	next      atomic.Uint64   // round robin over endpoints
	transport *http.Transport
	changed   chan struct{}
	loaded    map[string]loaded // the rebuild loop's alone
}

// clientSecrets reads Secrets through the API.
type clientSecrets struct{ c *client.Client }

func (s clientSecrets) Secret(ctx context.Context, ns, name string) (*api.Secret, error) {
	return s.c.Secrets(ns).Get(ctx, name)
}

// New returns a controller fed by f's informers, reading TLS Secrets
// through c.
func New(c *client.Client, f *cache.Factory, cfg Config) (*Controller, error) {
	if cfg.Refresh <= 0 {
		cfg.Refresh = 30 * time.Second
	}
	ic := &Controller{
		cfg: cfg, ingresses: f.Ingresses(), classes: f.IngressClasses(), services: f.Services(), endpoints: f.Endpoints(),
		secrets: clientSecrets{c}, changed: make(chan struct{}, 1), loaded: map[string]loaded{},
		transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			// The client's Accept-Encoding goes to the backend as it is,
			// and its answer comes back as it is, compressed or not.
			DisableCompression: true,
		},
	}
	ic.routes.Store(&table{})
	ic.certs.Store(&certs{})
	var err error
	if ic.fallback, _, err = pki.SelfSigned("minik8s ingress default certificate", nil); err != nil {
		return nil, err
	}
	return ic, nil
}

const dialTimeout = 2 * time.Second

func (ic *Controller) kick() {
	select {
	case ic.changed <- struct{}{}:
	default:
	}
}

// Run serves until ctx ends. A port that cannot be bound yet (taken) is
// tried again every few seconds; the node keeps running meanwhile.
func (ic *Controller) Run(ctx context.Context) error {
	kick := func() { ic.kick() }
	ic.ingresses.AddEventHandler(cache.Handler[*api.Ingress]{
		OnAdd: func(*api.Ingress) { kick() }, OnUpdate: func(_, _ *api.Ingress) { kick() }, OnDelete: func(*api.Ingress) { kick() }})
	ic.classes.AddEventHandler(cache.Handler[*api.IngressClass]{
		OnAdd: func(*api.IngressClass) { kick() }, OnUpdate: func(_, _ *api.IngressClass) { kick() }, OnDelete: func(*api.IngressClass) { kick() }})
	for _, inf := range []interface{ Start(context.Context) }{ic.ingresses, ic.classes, ic.services, ic.endpoints} {
		inf.Start(ctx)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	handler := &http.Server{Handler: ic, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	if ic.cfg.HTTPPort > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); ic.serve(ctx, handler, ic.cfg.HTTPPort, false) }()
	}
	if ic.cfg.HTTPSPort > 0 {
		tlsServer := &http.Server{Handler: ic, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
			BaseContext: func(net.Listener) context.Context { return ctx },
			TLSConfig:   &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: ic.certificate, NextProtos: []string{"h2", "http/1.1"}}}
		wg.Add(1)
		go func() { defer wg.Done(); ic.serve(ctx, tlsServer, ic.cfg.HTTPSPort, true) }()
	}
	t := time.NewTicker(ic.cfg.Refresh)
	defer t.Stop()
	for {
		if cache.WaitForSync(ctx, ic.ingresses, ic.classes) {
			ic.rebuild(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ic.changed:
		case <-t.C:
		}
	}
}

// serve listens on the node's address at port until ctx ends, retrying a
// bind that fails.
func (ic *Controller) serve(ctx context.Context, srv *http.Server, port int, useTLS bool) {
	addr := net.JoinHostPort(ic.cfg.Address, strconv.Itoa(port))
	var l net.Listener
	for {
		var err error
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		log.WithError(err).WithField("address", addr).Warn("ingress: cannot listen yet; trying again in 5s")
		if !wait.Sleep(ctx, 5*time.Second) {
			return
		}
	}
	bound := l.Addr().String()
	if useTLS {
		l = tls.NewListener(l, srv.TLSConfig)
	}
	log.WithFields(log.Fields{"address": bound, "tls": useTLS}).Info("ingress serving")
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.WithError(err).WithField("address", bound).Error("ingress server stopped")
	}
}

// rebuild makes the routes and certificates of the served Ingresses anew.
func (ic *Controller) rebuild(ctx context.Context) {
	classes := map[string]string{}
	for _, c := range ic.classes.Lister().List(nil) {
		classes[c.Name] = c.Spec.Controller
	}
	var ings []*api.Ingress
	for _, ing := range ic.ingresses.Lister().List(nil) {
		if served(ing, classes) {
			ings = append(ings, ing)
		}
	}
	ic.routes.Store(buildTable(ings))
	c, problems := loadCerts(ctx, ic.secrets, ings, ic.loaded)
	for _, p := range problems {
		log.Warn("ingress: " + p)
	}
	ic.certs.Store(c)
}

func (ic *Controller) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := ic.certs.Load().forHost(hello.ServerName); c != nil {
		return c, nil
	}
	return &ic.fallback, nil
}
