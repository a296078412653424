// Package apiserver is the REST front of minik8s: Kubernetes-style paths for
// every kind, the function API of the reference design, and watch, over a
// storage.Interface on etcd. It is the only component that talks to etcd.
package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/alloc"
	"minik8s/apiserver/audit"
	"minik8s/apiserver/auth"
	"minik8s/apiserver/authz"
	"minik8s/apiserver/fields"
	"minik8s/apiserver/funcapi"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage"
	"minik8s/pkg/storage/etcd"
	"minik8s/pkg/tracing"
	"minik8s/pkg/wait"
)

// Config configures the apiserver.
type Config struct {
	// Address is the local port, e.g. "127.0.0.1:8080": plain HTTP that
	// acts as the admin without credentials, as kubectl proxy does, for
	// scripts of the reference design. Loopback addresses only; "" turns
	// it off.
	Address string
	// SecureAddress is the secure port, e.g. ":6443": TLS only, every
	// request authenticated and authorized. "" turns it off.
	SecureAddress string
	// AdvertiseAddress is where the rest of the cluster (nodes, pods
	// through the kubernetes Service) reaches the secure port, as
	// Kubernetes' --advertise-address: by default the address it binds,
	// or when it binds every address the one of the default route's
	// link. The serving certificate covers it.
	AdvertiseAddress string
	// TLSSANs are more names and addresses for the serving certificate.
	TLSSANs []string
	// TokenAuthFile is a static token file (token,user,uid,"groups").
	TokenAuthFile string
	// AuditLogPath is where writes are logged (default DATA/audit.log;
	// "-" turns the audit log off).
	AuditLogPath string
	// DataDir holds the embedded etcd's data when EtcdEndpoints is empty.
	DataDir string
	// EtcdEndpoints of an external etcd cluster; empty starts embedded etcd.
	EtcdEndpoints []string
	// EtcdTLS: the CA, client certificate and key for the external etcd
	// (--etcd-cafile, --etcd-certfile, --etcd-keyfile); the embedded one
	// gets certificates of the cluster CA.
	EtcdTLS etcd.TLSFiles
	// EtcdQuotaBytes is the size the embedded etcd's database may reach
	// (--etcd-quota-bytes; 0: etcd's default of 2 GiB). Past it etcd
	// raises its NOSPACE alarm and refuses writes until space is freed.
	EtcdQuotaBytes int64
	// MaxBodyBytes bounds request bodies (413 beyond).
	MaxBodyBytes int64
	// FuncInstanceTTL is how long call records are kept
	// (DefaultFuncInstanceTTL); the function controller also keeps their
	// number within a budget.
	FuncInstanceTTL time.Duration
	// RequestTimeout bounds a request that is not a watch
	// (DefaultRequestTimeout).
	RequestTimeout time.Duration
	// MaxWatchesPerClient bounds the watches one client holds open
	// (DefaultMaxWatchesPerClient; negative: no bound).
	MaxWatchesPerClient int
	// MaxWatchBytes and MaxWatchBytesPerClient bound what one watch, and
	// all the watches of one client, hold in the server: events queued,
	// initial list read and not yet sent, the event being written
	// (DefaultMaxWatchBytes, DefaultMaxWatchBytesPerClient; negative: no
	// bound). Past them the watch ends and its client resumes from the
	// last version it got, as Kubernetes' cacher ends a slow watcher.
	MaxWatchBytes          int64
	MaxWatchBytesPerClient int64
	// MaxPendingCalls bounds the asynchronous calls not ended yet, as the
	// runners count them (DefaultMaxPendingCalls; negative: no bound):
	// beyond it a call gets 429 with Retry-After, so a burst that outruns
	// the functions cannot fill the store and the runners' memory.
	MaxPendingCalls int
	// MaxPendingCallBytes bounds what the arguments of those calls hold
	// (DefaultMaxPendingCallBytes, or an eighth of EtcdQuotaBytes when
	// that is less; negative: no bound), so that calls cannot fill the
	// store: beyond it, 429 with Retry-After as for the count.
	MaxPendingCallBytes int64
	// OTLPEndpoint, when set, is where the apiserver's spans of calls go
	// (OTLP over HTTP, a base URL); they are kept with the instance either way.
	OTLPEndpoint string
	// LocalRunner, when set, is a function runner in this process: the
	// synchronous calls this apiserver accepts go to it without an HTTP
	// hop while it serves (as cluster/ wires minik8s up).
	LocalRunner funcapi.CallRunner
	// ServiceCIDR is the range cluster IPs are allocated from
	// (DefaultServiceCIDR).
	ServiceCIDR string
	// ClusterCIDR is the range of pod addresses (DefaultClusterCIDR); each
	// Node gets a /NodeCIDRMaskSize slice of it (DefaultNodeCIDRMaskSize)
	// when it registers.
	ClusterCIDR      string
	NodeCIDRMaskSize int
	// ServiceNodePortRange is where NodePort Services' node ports come
	// from (DefaultServiceNodePortRange).
	ServiceNodePortRange string
	// EgressAllowCIDRs are the ranges a call's X-Callback-Url may name
	// although they trust the platform (loopback, link-local, this
	// machine's addresses, the pod and service ranges): the runners'
	// --egress-allow-cidrs, so that the apiserver refuses at once, with
	// 400, what the runners would refuse at the dial. Empty by default.
	EgressAllowCIDRs []netip.Prefix
	// BookmarkInterval is how often a watch that allows bookmarks gets one
	// (DefaultBookmarkInterval), so that a client resumes from a recent
	// version even when its filter let no change through.
	BookmarkInterval time.Duration
}

// DefaultBookmarkInterval: Kubernetes sends a bookmark about every minute.
const DefaultBookmarkInterval = time.Minute

// DefaultMaxBodyBytes fits function sources comfortably and stays under
// etcd's request limit.
const DefaultMaxBodyBytes = 1 << 20

// DefaultMaxPendingCalls is the backlog of asynchronous calls accepted
// before new ones wait (429).
const DefaultMaxPendingCalls = 20000

// DefaultMaxPendingCallBytes is what the arguments of pending asynchronous
// calls may hold: an eighth of etcd's default quota, as an argument may
// take several times its size once stored (escaped, and kept as the
// call's next step too).
const DefaultMaxPendingCallBytes = 256 << 20

// AuditLogFile is the audit log's name in the data dir.
const AuditLogFile = "audit.log"

// EventTTL is how long an event is kept after it was first made, as
// Kubernetes keeps them.
const EventTTL = time.Hour

// DefaultFuncInstanceTTL is the retention of call records.
const DefaultFuncInstanceTTL = time.Hour

func (c *Config) setDefaults() {
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.AuditLogPath == "" {
		c.AuditLogPath = filepath.Join(c.DataDir, AuditLogFile)
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxWatchesPerClient == 0 {
		c.MaxWatchesPerClient = DefaultMaxWatchesPerClient
	}
	if c.MaxWatchBytes == 0 {
		c.MaxWatchBytes = DefaultMaxWatchBytes
	}
	if c.MaxWatchBytesPerClient == 0 {
		c.MaxWatchBytesPerClient = DefaultMaxWatchBytesPerClient
	}
	if c.MaxPendingCalls == 0 {
		c.MaxPendingCalls = DefaultMaxPendingCalls
	}
	if c.MaxPendingCallBytes == 0 {
		c.MaxPendingCallBytes = DefaultMaxPendingCallBytes
		if c.EtcdQuotaBytes > 0 && len(c.EtcdEndpoints) == 0 {
			c.MaxPendingCallBytes = min(c.MaxPendingCallBytes, c.EtcdQuotaBytes/8)
		}
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.BookmarkInterval <= 0 {
		c.BookmarkInterval = DefaultBookmarkInterval
	}
	if c.FuncInstanceTTL <= 0 {
		c.FuncInstanceTTL = DefaultFuncInstanceTTL
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = DefaultServiceCIDR
	}
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = DefaultClusterCIDR
	}
	if c.ServiceNodePortRange == "" {
		c.ServiceNodePortRange = DefaultServiceNodePortRange
	}
	if c.NodeCIDRMaskSize == 0 {
		c.NodeCIDRMaskSize = DefaultNodeCIDRMaskSize
	}
}

// Server serves the API over a store.
type Server struct {
	cfg        Config
	store      storage.Interface
	registries map[string]*registry.Store
	engine     *gin.Engine
	metrics    *prometheus.Registry
	calls      *funcapi.Calls
	watches    *watchLimiter
	namespaces *registry.NamespaceIndex
	quota      *quotaAdmission
	authz      *authz.Authorizer
	nodeAuthz  authz.NodeAuthorizer
	// nodePasswords binds node names to the passwords they joined with.
	nodePasswords *auth.NodePasswords
	audit         *audit.Log
	// creds and tokens authenticate the secure port (nil: not serving it).
	creds  *credentials
	tokens map[string]rbac.User
	// kubeletHTTPS reaches kubelets serving TLS, made once.
	kubeletOnce  sync.Once
	kubeletHTTPS *http.Transport
	// summariesRead shares kubelets' summaries among metrics requests.
	summariesRead *summaryCache
	// funcs serves the function API.
	funcs *funcHandlers
	// fields keeps managedFields and does server-side apply.
	fields *fields.Manager
	// customs are the custom resources served now (runCRDs).
	customs *customResources
	// openapi serves /openapi/v2 and /openapi/v3, the custom kinds'
	// included (refreshCustomOpenAPI).
	openapi *openAPI
	// selfEndpoint is "IP:PORT" of the secure port as the kubernetes
	// Service's Endpoints name it, once known (admitEndpoints).
	selfEndpoint atomic.Value
}

// New builds a server over store; Run is the usual entry point.
func New(cfg Config, store storage.Interface) *Server {
	cfg.setDefaults()
	s := &Server{cfg: cfg, store: store, registries: map[string]*registry.Store{}, metrics: prometheus.NewRegistry(), summariesRead: newSummaryCache(),
		customs: newCustomResources(), openapi: newOpenAPI()}
	var err error
	if s.fields, err = fields.New(append(slices.Clone(api.Resources), api.OtherVersions...)); err != nil {
		// Kubernetes' schema is compiled in: this is a build's bug.
		panic(err)
	}
	for _, res := range api.Resources {
		reg := &registry.Store{Resource: res, Storage: store}
		reg.Fields = fieldTracker{fields: s.fields}
		if res.Served().Group != res.Group {
			reg.Fields = fieldTracker{fields: s.fields, view: viewOf(res)}
		}
		reg.AdmitSpecs = s.admitPodSpecs
		if res.Kind == api.EndpointsResource.Kind {
			reg.AdmitState = s.admitEndpoints
		}
		reg.Cache = registry.NewWatchCache(store, reg.Prefix(""), res.New)
		if res.Kind == api.FuncInstancesResource.Kind {
			reg.TTL = cfg.FuncInstanceTTL
		}
		if res.Kind == api.EventsResource.Kind {
			reg.TTL = EventTTL
		}
		if res.Kind == api.ServicesResource.Kind {
			ips, err := alloc.NewClusterIPs(store, cfg.ServiceCIDR)
			if err != nil {
				// Run checks the range first; New keeps serving without.
				log.WithError(err).Error("service range unusable: services get no cluster IP")
			}
			reg.IPs = ips
			if reg.NodePorts, err = alloc.NewNodePorts(store, cfg.ServiceNodePortRange); err != nil {
				log.WithError(err).Error("node port range unusable: NodePort services get no node ports")
			}
		}
		if res.Kind == api.NodesResource.Kind {
			cidrs, err := alloc.NewPodCIDRs(store, cfg.ClusterCIDR, cfg.NodeCIDRMaskSize)
			if err != nil {
				log.WithError(err).Error("cluster range unusable: nodes get no pod CIDR")
			}
			reg.PodCIDRs = cidrs
		}
		s.registries[res.Name] = reg
	}
	s.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.namespaces = registry.NewNamespaceIndex(s.registries[api.NamespacesResource.Name])
	s.quota = newQuotaAdmission(s.registries)
	for _, reg := range s.registries {
		if reg.Resource.Namespaced {
			reg.Namespaces = s.namespaces
			reg.Reserve = s.quota.reserve
		}
	}
	// Priority first: a quota may scope by it.
	s.registries[api.PodsResource.Name].MutateCreate = chainMutations(s.admitPriority, s.quota.limitPod)
	s.registries[api.PriorityClassesResource.Name].MutateCreate = s.admitPriorityClass
	s.registries[api.IngressesResource.Name].MutateCreate = s.defaultIngressClass
	s.registries[api.PersistentVolumeClaimsResource.Name].MutateCreate = s.defaultStorageClass
	s.nodePasswords = auth.NewNodePasswords(store, registryObjects(s.registries))
	s.calls = funcapi.NewCalls(funcapi.Config{
		Funcs:           s.registries[api.FuncsResource.Name],
		Revisions:       s.registries[api.FuncRevisionsResource.Name],
		Instances:       s.registries[api.FuncInstancesResource.Name],
		Leases:          s.registries[api.LeasesResource.Name],
		Retention:       s.cfg.FuncInstanceTTL,
		MaxPending:      s.cfg.MaxPendingCalls,
		MaxPendingBytes: s.cfg.MaxPendingCallBytes,
		Local:           s.cfg.LocalRunner,
		// The credentials are loaded after the registries: read when a
		// runner is first reached over TLS.
		ClientCert: func() *tls.Certificate {
			if s.creds == nil {
				return nil
			}
			return &s.creds.kubeletClient
		},
		ClusterCIDR:      s.cfg.ClusterCIDR,
		ServiceCIDR:      s.cfg.ServiceCIDR,
		EgressAllowCIDRs: s.cfg.EgressAllowCIDRs,
	})
	s.authz = authz.NewAuthorizer(s.registries)
	s.nodeAuthz = authz.NodeAuthorizer{Pods: s.registries[api.PodsResource.Name], Ingresses: s.registries[api.IngressesResource.Name],
		Volumes: s.registries[api.PersistentVolumesResource.Name]}
	s.watches = newWatchLimiter(cfg.MaxWatchesPerClient, cfg.MaxWatchBytes, cfg.MaxWatchBytesPerClient)
	s.metrics.MustRegister(s.watches.cutOff)
	s.engine = s.routes()
	return s
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.engine }

// Run starts etcd (embedded unless endpoints are given) and serves until
// ctx ends: the secure port when SecureAddress is set, the local port when
// Address is.
func Run(ctx context.Context, cfg Config) error {
	cfg.setDefaults()
	if _, err := alloc.ParseServiceCIDR(cfg.ServiceCIDR); err != nil {
		return err
	}
	if _, err := alloc.ParseClusterCIDR(cfg.ClusterCIDR, cfg.NodeCIDRMaskSize); err != nil {
		return err
	}
	if _, _, err := alloc.ParseNodePortRange(cfg.ServiceNodePortRange); err != nil {
		return err
	}
	if cfg.Address == "" && cfg.SecureAddress == "" {
		return errdefs.Invalid("secure-port", "neither the secure port nor the local port is on: nothing would be served")
	}
	if err := checkLoopback(cfg.Address); err != nil {
		return err
	}
	if cfg.EtcdQuotaBytes < 0 || (cfg.EtcdQuotaBytes > 0 && len(cfg.EtcdEndpoints) > 0) {
		return errdefs.Invalid("etcd-quota-bytes", "%d: the quota of the embedded etcd is a size in bytes, and an external etcd has its own (--quota-backend-bytes)", cfg.EtcdQuotaBytes)
	}
	if err := cfg.resolveAdvertiseAddress(); err != nil {
		return err
	}
	creds, err := loadCredentials(&cfg)
	if err != nil {
		return err
	}
	tokens, err := auth.StaticTokens(cfg.TokenAuthFile)
	if err != nil {
		return err
	}
	endpoints, etcdTLS := cfg.EtcdEndpoints, cfg.EtcdTLS
	var store *etcd.Store
	if len(endpoints) == 0 {
		dir := filepath.Join(cfg.DataDir, "etcd")
		log.WithField("dir", dir).Info("starting embedded etcd")
		serving, clientFiles, err := embeddedEtcdCerts(&cfg)
		if err != nil {
			return err
		}
		e, err := etcd.StartEmbedded(ctx, dir, serving, etcd.QuotaBytes(cfg.EtcdQuotaBytes))
		if err != nil {
			return err
		}
		defer e.Close()
		// Reads and writes call the etcd in process; watches, leases and
		// maintenance go through its listener.
		tlsConfig, err := clientFiles.Config()
		if err != nil {
			return fmt.Errorf("etcd TLS: %w", err)
		}
		client, err := etcd.NewClient(e.Endpoints, tlsConfig)
		if err != nil {
			return err
		}
		store = etcd.NewInProcess(client, e.Client())
	} else {
		var tlsConfig *tls.Config
		if etcdTLS != (etcd.TLSFiles{}) {
			if tlsConfig, err = etcdTLS.Config(); err != nil {
				return fmt.Errorf("etcd TLS: %w", err)
			}
		}
		client, err := etcd.NewClient(endpoints, tlsConfig)
		if err != nil {
			return err
		}
		store = etcd.New(client)
	}
	defer store.Close()
	go store.RunCompactor(ctx, etcd.DefaultCompactInterval)
	go store.RunSpaceRecovery(ctx, etcd.DefaultSpaceCheckInterval)
	srv := New(cfg, store)
	srv.creds, srv.tokens = creds, tokens

	var ls Listeners
	if cfg.Address != "" {
		if ls.Local, err = net.Listen("tcp", cfg.Address); err != nil {
			return fmt.Errorf("apiserver listen on %s: %w", cfg.Address, err)
		}
	}
	if cfg.SecureAddress != "" {
		if ls.Secure, err = net.Listen("tcp", cfg.SecureAddress); err != nil {
			if ls.Local != nil {
				ls.Local.Close()
			}
			return fmt.Errorf("apiserver listen on %s: %w", cfg.SecureAddress, err)
		}
		if err := writeAdminKubeconfig(&cfg, creds, SecureURL(ls.Secure.Addr())); err != nil {
			return fmt.Errorf("writing the admin kubeconfig: %w", err)
		}
	}
	return srv.ServeListeners(ctx, ls)
}

// SecureURL is the URL clients on this machine reach the secure port at.
func SecureURL(addr net.Addr) string {
	_, port, _ := net.SplitHostPort(addr.String())
	return "https://" + net.JoinHostPort("127.0.0.1", port)
}

// checkLoopback refuses a local port on anything but loopback: it acts as
// the admin for whoever connects.
func checkLoopback(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return errdefs.Invalid("address", "%q is not host:port: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return errdefs.Invalid("address", "the local port acts as the admin without credentials, so it binds only a loopback address such as 127.0.0.1, not %q; "+
			"other machines use the secure port", host)
	}
	return nil
}

// Listeners are what the apiserver serves on; a nil one is off.
type Listeners struct {
	// Local serves plain HTTP as the admin (loopback only).
	Local net.Listener
	// Secure serves TLS, authenticated; it needs the server's credentials
	// (Run loads them).
	Secure net.Listener
}

// Serve serves the local port on l until ctx ends: plain HTTP, as the admin.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	return s.ServeListeners(ctx, Listeners{Local: l})
}

// ServeListeners serves ls until ctx ends, then shuts down gracefully.
func (s *Server) ServeListeners(ctx context.Context, ls Listeners) error {
	if err := retryUntil(ctx, s.namespaces.Bootstrap); err != nil {
		return fmt.Errorf("apiserver: the built-in namespaces: %w", err)
	}
	ensurePolicy := func(ctx context.Context) error { return authz.EnsureBootstrapPolicy(ctx, s.registries) }
	if err := retryUntil(ctx, ensurePolicy); err != nil {
		return fmt.Errorf("apiserver: the built-in RBAC policy: %w", err)
	}
	if err := retryUntil(ctx, s.ensureIngressClass); err != nil {
		return fmt.Errorf("apiserver: the default IngressClass: %w", err)
	}
	if err := retryUntil(ctx, s.ensureStorageClass); err != nil {
		return fmt.Errorf("apiserver: the default StorageClass: %w", err)
	}
	if err := retryUntil(ctx, s.ensurePriorityClasses); err != nil {
		return fmt.Errorf("apiserver: the system PriorityClasses: %w", err)
	}
	auditLog, err := audit.Open(s.cfg.AuditLogPath)
	if err != nil {
		return err
	}
	defer auditLog.Close()
	s.audit = auditLog
	var bg sync.WaitGroup
	exporter, err := tracing.NewExporter(ctx, s.cfg.OTLPEndpoint)
	if err != nil {
		return err
	}
	s.calls.Exporter = exporter
	background := []func(context.Context){s.namespaces.Run, s.quota.Run, s.calls.Run, s.authz.Run, exporter.Run, s.runCRDs}
	for _, reg := range s.registries {
		background = append(background, reg.Cache.Run)
		if reg.IPs != nil {
			background = append(background, func(ctx context.Context) { reg.IPs.RunRepair(ctx, time.Minute) })
		}
		if reg.NodePorts != nil {
			background = append(background, func(ctx context.Context) { reg.NodePorts.RunRepair(ctx, time.Minute) })
		}
		if reg.PodCIDRs != nil {
			background = append(background, func(ctx context.Context) {
				if err := reg.AssignMissingPodCIDRs(ctx); err != nil && ctx.Err() == nil {
					log.WithError(err).Warn("giving registered nodes their pod CIDRs")
				}
				reg.PodCIDRs.RunRepair(ctx, time.Minute)
			})
		}
	}
	for _, fn := range background {
		bg.Add(1)
		go func() {
			defer bg.Done()
			fn(ctx)
		}()
	}
	defer bg.Wait()

	var servers []*http.Server
	errc := make(chan error, 2)
	serve := func(l net.Listener, hs *http.Server, what string) {
		servers = append(servers, hs)
		go func() { errc <- hs.Serve(l) }()
		log.WithFields(log.Fields{"address": l.Addr().String(), "port": what}).Info("apiserver serving")
	}
	if ls.Local != nil {
		hs := s.httpServer(ctx)
		hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context { return markLocal(withConn(ctx, c), c) }
		serve(ls.Local, hs, "local (plain HTTP, acts as the admin)")
	}
	if ls.Secure != nil {
		if s.creds == nil {
			return errors.New("apiserver: the secure port needs the cluster's credentials")
		}
		bg.Add(1)
		go func() {
			defer bg.Done()
			if err := retryUntil(ctx, func(ctx context.Context) error { return s.ensureKubernetesService(ctx, ls.Secure.Addr()) }); err != nil && ctx.Err() == nil {
				log.WithError(err).Error("the kubernetes Service")
			}
		}()
		hs := s.httpServer(ctx)
		hs.TLSConfig = s.tlsConfig()
		serve(tls.NewListener(ls.Secure, hs.TLSConfig), hs, "secure (TLS)")
	}
	select {
	case err := <-errc:
		return fmt.Errorf("apiserver: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Watches end with ctx (BaseContext); Shutdown waits for the rest.
	for _, hs := range servers {
		if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		hs.Close()
	}
	log.Info("apiserver stopped")
	return nil
}

func (s *Server) httpServer(ctx context.Context) *http.Server {
	return &http.Server{Handler: bodyDeadline(s.engine), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnContext: withConn,
		// Handshake and TLS errors of probing clients are not the server's.
		ErrorLog: stdlog.New(io.Discard, "", 0)}
}

// tlsConfig serves the cluster's certificate and asks for (but does not
// require) a client certificate of the cluster CA: bearer tokens are the
// other way in.
func (s *Server) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{s.creds.serving},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    s.creds.ca.Pool(),
		NextProtos:   []string{"http/1.1"},
	}
}

// retryUntil runs fn until it succeeds or ctx ends (etcd may still be
// electing a leader).
func retryUntil(ctx context.Context, fn func(context.Context) error) error {
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		log.WithError(err).Warn("apiserver: retrying")
		if !wait.Sleep(ctx, 500*time.Millisecond) {
			return err
		}
	}
}

// nameParam leaves the object's name where the route put it; for
// namespaces, namespaceAsName copies it from :ns.
func nameParam(*gin.Context) {}

func namespaceAsName(c *gin.Context) {
	c.Params = append(c.Params, gin.Param{Key: "name", Value: c.Param("ns")})
}

// routes builds the engine; observe, for tests, runs once a request is
// authorized, before its handler.
func (s *Server) routes(observe ...gin.HandlerFunc) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := newRouter(gin.New())
	r.RedirectTrailingSlash = false
	r.HandleMethodNotAllowed = true
	// The request is read once, first (requestInfo); the audit log sees
	// the answer errorMiddleware writes and the user authn finds.
	r.Use(gin.Recovery(), s.requestInfo(r.infos), s.metricsMiddleware(), s.logMiddleware(), s.auditMiddleware(), errorMiddleware(),
		s.bodyLimit(), s.requestTimeout(), s.authn(), s.authorize())
	r.Use(observe...)

	r.handle(http.MethodGet, "/healthz", nonResource(), s.health)
	r.handle(http.MethodGet, "/readyz", nonResource(), s.health)
	r.handle(http.MethodGet, "/livez", nonResource(), func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	r.handle(http.MethodGet, "/metrics", nonResource(), gin.WrapH(promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{})))
	newDiscovery(s.customs.discovery).routes(r)
	s.metricsRoutes(r)
	s.openapi.routes(r)
	s.uiRoutes(r)

	for _, res := range api.Resources {
		h := &handlers{srv: s, reg: s.registries[res.Name], maxBody: s.cfg.MaxBodyBytes}
		s.resourceRoutes(r, res.Prefix(), res.Group, h)
		if served := res.Served(); served.Group != res.Group {
			// The function kinds: the minik8s.io/v1 view beside the
			// reference form under /api/v1.
			view := *h
			view.view = viewOf(res)
			s.resourceRoutes(r, served.Prefix(), served.Group, &view)
		}
	}
	for _, res := range api.OtherVersions {
		h := &handlers{srv: s, reg: s.registries[res.Name], maxBody: s.cfg.MaxBodyBytes, view: viewOf(res)}
		s.resourceRoutes(r, res.Prefix(), res.Group, h)
	}

	review := func(res string) routeInfo {
		return routeInfo{resource: true, group: "authorization.k8s.io", res: res}
	}
	r.handle(http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review("selfsubjectaccessreviews"), s.accessReview(true))
	r.handle(http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", review("subjectaccessreviews"), s.accessReview(false))
	r.handle(http.MethodGet, "/cacerts", nonResource(), s.caCerts)
	r.handle(http.MethodPost, api.NodeCredentialsPath, nonResource(), s.nodeCredentials)

	s.funcs = &funcHandlers{handlers: handlers{srv: s, reg: s.registries[api.FuncsResource.Name], maxBody: s.cfg.MaxBodyBytes}, calls: s.calls}
	funcs := routeInfo{funcs: true}
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		r.handle(m, "/api/funcs/*path", funcs, s.funcs.dispatch)
	}
	r.handle(http.MethodGet, "/api/funcs", funcs, s.funcs.dispatch)
	r.handle(http.MethodGet, "/api/watch/funcs/template", funcs, s.funcs.dispatch)
	r.handle(http.MethodGet, "/api/watch/funcs/template/:name", funcs, s.funcs.dispatch)

	s.customRoutes(r)

	r.NoRoute(func(c *gin.Context) {
		fail(c, notFoundPath(c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) {
		c.JSON(http.StatusMethodNotAllowed, api.Status{Error: fmt.Sprintf("method %s is not allowed on %s", c.Request.Method, c.Request.URL.Path),
			Reason: "MethodNotAllowed", Code: http.StatusMethodNotAllowed})
	})
	r.checkRoutes()
	return r.Engine
}

// resourceRoutes serves the REST paths of h's resource under base
// ("/api/v1", "/apis/apps/v1"), of API group group.
func (s *Server) resourceRoutes(r *router, base, group string, h *handlers) {
	res := h.reg.Resource
	coll := routeInfo{resource: true, group: group, res: res.Name}
	if res.Namespaced {
		// All namespaces, as kubectl get -A.
		r.handle(http.MethodGet, base+"/"+res.Name, coll, h.list)
		base += "/namespaces/:ns"
		coll.namespaced = true
	}
	path := base + "/" + res.Name
	create, update, updateStatus := h.create, h.update, h.updateStatus
	if res.Name == api.FuncInstancesResource.Name {
		// Instances are made only by calling a function; runners
		// advance them through the status subresource.
		create, update, updateStatus = h.createTriggerRecord, refuseInstanceWrite, h.updateInstanceStatus
	}
	r.handle(http.MethodGet, path, coll, h.list)
	r.handle(http.MethodPost, path, coll, create)
	one, item, name := path+"/:name", coll, nameParam
	item.nameParam = "name"
	if res.Name == api.NamespacesResource.Name {
		// The router takes one wildcard name per position, and the
		// namespaced kinds have :ns there.
		one, item.nameParam, name = path+"/:ns", "ns", namespaceAsName
	}
	sub := func(subresource, verb string) routeInfo {
		i := item
		i.subresource, i.verb = subresource, verb
		return i
	}
	r.handle(http.MethodGet, one, item, name, h.get)
	r.handle(http.MethodPut, one, item, name, update)
	r.handle(http.MethodDelete, one, item, name, h.delete)
	if res.Name != api.FuncInstancesResource.Name {
		r.handle(http.MethodPatch, one, item, name, h.patch((*registry.Store).Update, true))
	}
	if res.HasStatus {
		r.handle(http.MethodGet, one+"/status", sub("status", ""), name, h.get)
		r.handle(http.MethodPut, one+"/status", sub("status", ""), name, updateStatus)
		if res.Name != api.FuncInstancesResource.Name {
			r.handle(http.MethodPatch, one+"/status", sub("status", ""), name, h.patch((*registry.Store).UpdateStatus, false))
		}
	}
	switch res.Name {
	case api.NamespacesResource.Name:
		r.handle(http.MethodPut, one+"/finalize", sub("finalize", ""), name, h.finalizeNamespace)
	case api.PodsResource.Name:
		r.handle(http.MethodPost, one+"/binding", sub("binding", ""), h.bind)
		r.handle(http.MethodPost, one+"/eviction", sub("eviction", ""), h.evict)
		r.handle(http.MethodGet, one+"/log", sub("log", ""), s.podLog)
		// Running a command is a create, whatever the method (kubectl's
		// websocket upgrade is a GET), as Kubernetes authorizes it.
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			r.handle(m, one+"/exec", sub("exec", "create"), s.podExec)
			r.handle(m, one+"/portforward", sub("portforward", "create"), s.podPortForward)
		}
	case api.ServiceAccountsResource.Name:
		r.handle(http.MethodPost, one+"/token", sub("token", ""), h.serviceAccountToken)
	case api.ReplicaSetsResource.Name, api.DeploymentsResource.Name, api.StatefulSetsResource.Name:
		r.handle(http.MethodGet, one+"/scale", sub("scale", ""), h.getScale)
		r.handle(http.MethodPut, one+"/scale", sub("scale", ""), h.updateScale)
		r.handle(http.MethodPatch, one+"/scale", sub("scale", ""), h.patchScale)
	}
}

// refuseInstanceWrite answers a REST write of a FuncInstance: such a
// record would claim a call that never ran.
func refuseInstanceWrite(c *gin.Context) {
	c.JSON(http.StatusMethodNotAllowed, api.Status{
		Error: fmt.Sprintf("method %s is not allowed on %s: function instances are created by calling a function "+
			"(POST /api/funcs/NAME) and advanced only by function runners (the status subresource)", c.Request.Method, c.Request.URL.Path),
		Reason: "MethodNotAllowed", Code: http.StatusMethodNotAllowed})
	c.Abort()
}

func notFoundPath(path string) error {
	for _, p := range []string{"/api/v1/", "/apis/apps/v1/", "/apis/coordination.k8s.io/v1/", "/apis/" + api.FuncGroupVersion + "/"} {
		if strings.HasPrefix(path, p) {
			parts := strings.Split(strings.TrimPrefix(path, p), "/")
			kind := parts[0]
			if kind == "namespaces" && len(parts) > 2 {
				kind = parts[2]
			}
			if _, ok := api.LookupResource(kind); !ok {
				return fmt.Errorf("the server doesn't have a resource type %q: %w", kind, errNoRoute)
			}
		}
	}
	return fmt.Errorf("no route for %s: %w", path, errNoRoute)
}
