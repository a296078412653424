package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

// MaxRequestBytes is the embedded etcd's limit on one request. A function
// instance holds its argument and its next argument or result, each up to
// 512 KiB, plus step records; JSON stores a control character as six bytes,
// so 2 × 512 KiB × 6 must fit with room for the records. Writes above it
// are refused as too large (413), never retried.
const MaxRequestBytes = 8 << 20

// MaxTxnOps is how many operations etcd takes in one transaction (its
// default, which the embedded etcd keeps): a write of several objects at
// once (CreateMany) holds at most this many.
const MaxTxnOps = int(embed.DefaultMaxTxnOps)

// Embedded is an etcd server running inside this process.
type Embedded struct {
	etcd      *embed.Etcd
	Endpoints []string
}

// TLSFiles name PEM files: a CA that verifies the other side, and a
// certificate with its key.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
}

// Config returns a client TLS configuration of the files.
func (f TLSFiles) Config() (*tls.Config, error) {
	return transport.TLSInfo{CertFile: f.CertFile, KeyFile: f.KeyFile, TrustedCAFile: f.CAFile}.ClientConfig()
}

// Option configures an embedded etcd: TLSFiles (its serving certificate)
// or QuotaBytes.
type Option interface{ apply(*embed.Config) }

// apply makes the server speak TLS to clients and its peer port, taking
// only clients with a certificate of f's CA.
func (f TLSFiles) apply(cfg *embed.Config) {
	info := transport.TLSInfo{CertFile: f.CertFile, KeyFile: f.KeyFile, TrustedCAFile: f.CAFile, ClientCertAuth: true}
	cfg.ClientTLSInfo, cfg.PeerTLSInfo = info, info
}

// QuotaBytes is the size the database may reach before etcd raises its
// NOSPACE alarm and refuses writes (etcd's --quota-backend-bytes; 0:
// etcd's default of 2 GiB).
type QuotaBytes int64

func (q QuotaBytes) apply(cfg *embed.Config) { cfg.QuotaBackendBytes = int64(q) }

// StartEmbedded starts a single-member etcd with its data in dir, listening
// on free loopback ports, and waits until it serves. With a TLSFiles
// option it speaks TLS to clients and its peer port and takes only clients
// with a certificate of that CA.
func StartEmbedded(ctx context.Context, dir string, opts ...Option) (*Embedded, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("etcd data dir: %w", err)
	}
	// A free port is found by listening on :0 and closing, so another
	// process may take it before etcd binds it: etcd binds before it writes
	// anything, so a start that lost the race is tried on fresh ports.
	for attempt := 1; ; attempt++ {
		e, err := startEmbedded(ctx, dir, opts)
		if err == nil || attempt == 5 || !addrInUse(err) {
			return e, err
		}
	}
}

func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

func startEmbedded(ctx context.Context, dir string, opts []Option) (*Embedded, error) {
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return nil, err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	for _, o := range opts {
		if _, ok := o.(TLSFiles); ok {
			clientURL.Scheme, peerURL.Scheme = "https", "https"
		}
	}
	cfg.Dir = dir
	cfg.Name = "minik8s"
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// Keep an hour of history for watchers resuming from a revision, and
	// let old revisions go after that so the data dir does not grow forever.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"
	cfg.MaxRequestBytes = MaxRequestBytes
	// etcd keeps its raft log in memory up to a snapshot: every 100 000
	// writes by default, which under a stream of calls holds hundreds of
	// MB. A snapshot every 10 000 bounds it, as older etcd releases did.
	cfg.SnapshotCount = 10000
	for _, o := range opts {
		o.apply(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s did not become ready in 60s", dir)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	return &Embedded{etcd: e, Endpoints: []string{clientURL.String()}}, nil
}

// Close stops the server and waits until its data is flushed.
// Client is a client of the embedded etcd that calls its server in this
// process, without a socket, TLS, HTTP/2 or gRPC's encoding between them
// (a fifth of a busy apiserver's time went on those): see NewInProcess
// for what it may be used for. Close it when done.
func (e *Embedded) Client() *clientv3.Client {
	return v3client.New(e.etcd.Server)
}

func (e *Embedded) Close() {
	e.etcd.Close()
}

// Err reports a fatal error of the running server.
func (e *Embedded) Err() <-chan error { return e.etcd.Err() }

func freeLoopbackURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("finding a free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	return &url.URL{Scheme: "http", Host: addr}, nil
}

// NewClient opens an etcd client on endpoints.
func NewClient(endpoints []string, tlsConfig ...*tls.Config) (*clientv3.Client, error) {
	var tc *tls.Config
	if len(tlsConfig) > 0 {
		tc = tlsConfig[0]
	}
	c, err := clientv3.New(clientv3.Config{
		TLS:         tc,
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		// Above the embedded etcd's MaxRequestBytes, so that the server,
		// not the client, refuses what is too large (both read as 413).
		MaxCallSendMsgSize: MaxRequestBytes + 1<<20,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return c, nil
}
