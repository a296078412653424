// Package framework starts real minik8s components for integration and
// end-to-end tests: an apiserver on embedded etcd in a temp dir, and (for
// node tests) a private containerd.
package framework

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver"
	"minik8s/pkg/client"
)

func init() {
	// Components log at info; in tests only warnings and errors are worth
	// the noise unless MINIK8S_LOG_LEVEL asks for more.
	level := log.WarnLevel
	if l, err := log.ParseLevel(os.Getenv("MINIK8S_LOG_LEVEL")); err == nil {
		level = l
	}
	log.SetLevel(level)
}

// APIServer is an apiserver with embedded etcd, running in the test process
// on a fixed loopback port, so that it can be stopped and started again on
// the same data dir and address.
type APIServer struct {
	t       testing.TB
	DataDir string
	Addr    string
	URL     string
	Client  *client.Client
	// SecureURL is the secure port's (StartSecureAPIServer), else "".
	SecureURL string
	// ServiceCIDR is this test binary's own range of cluster IPs (a /16 in
	// 127.0.0.0/8): every kubelet's proxy listens on the cluster IPs with
	// SO_REUSEPORT, so two binaries sharing a range would serve each
	// other's Services.
	ServiceCIDR string

	cancel    context.CancelFunc
	done      chan error
	local     *localRunner
	configure func(*apiserver.Config)
}

// StartAPIServer starts an apiserver on a free loopback port with its data
// in a temp dir; it is stopped when the test ends.
func StartAPIServer(t testing.TB) *APIServer {
	t.Helper()
	return StartAPIServerWith(t, nil)
}

// StartAPIServerWith is StartAPIServer with configure applied to the
// server's configuration (address and data dir are the framework's; the
// service range too, unless configure sets one).
func StartAPIServerWith(t testing.TB, configure func(*apiserver.Config)) *APIServer {
	t.Helper()
	addr := FreeAddr(t)
	var probe apiserver.Config
	if configure != nil {
		configure(&probe)
	}
	cidr := probe.ServiceCIDR
	if cidr == "" {
		var err error
		if cidr, err = serviceRange(); err != nil {
			t.Fatalf("claiming a service range: %v", err)
		}
	}
	s := &APIServer{t: t, DataDir: filepath.Join(t.TempDir(), "data"), Addr: addr, URL: "http://" + addr, ServiceCIDR: cidr,
		local: &localRunner{}, configure: configure}
	s.Client = client.New(s.URL)
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// StartSecureAPIServer is StartAPIServer with the secure port on as well,
// on a free loopback port (SecureURL), authenticating the bearer tokens
// of tokenFile (lines of a static token file: token,user,uid,"groups").
// URL and Client stay on the local port, which acts as the admin.
func StartSecureAPIServer(t testing.TB, tokenFile string) *APIServer {
	t.Helper()
	return StartSecureAPIServerWith(t, tokenFile, nil)
}

// StartSecureAPIServerWith is StartSecureAPIServer with configure applied
// to the server's configuration first.
func StartSecureAPIServerWith(t testing.TB, tokenFile string, configure func(*apiserver.Config)) *APIServer {
	t.Helper()
	secure := FreeAddr(t)
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(tokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	s := StartAPIServerWith(t, func(c *apiserver.Config) {
		if configure != nil {
			configure(c)
		}
		c.SecureAddress, c.TokenAuthFile = secure, path
	})
	s.SecureURL = "https://" + secure
	return s
}

// SecureClient is a client of the secure port that trusts the cluster CA
// (DATA/ca.crt), with the credentials of cfg (a token, a certificate).
func (s *APIServer) SecureClient(t testing.TB, cfg client.Config) *client.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server, cfg.CAData = s.SecureURL, ca
	c, err := client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ServiceIP is the address of this server's service range whose last two
// bytes are low, as in "200.7".
func (s *APIServer) ServiceIP(low string) string {
	return strings.TrimSuffix(s.ServiceCIDR, "0.0/16") + low
}

// Start starts the server (again) and waits until it answers /healthz.
func (s *APIServer) Start() {
	s.t.Helper()
	if s.cancel != nil {
		s.t.Fatalf("apiserver already running")
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done = make(chan error, 1)
	cfg := apiserver.Config{}
	if s.configure != nil {
		s.configure(&cfg)
	}
	cfg.Address, cfg.DataDir, cfg.ServiceCIDR, cfg.LocalRunner = s.Addr, s.DataDir, s.ServiceCIDR, s.local
	go func() { s.done <- apiserver.Run(ctx, cfg) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		hctx, hcancel := context.WithTimeout(ctx, time.Second)
		err := s.Client.Healthy(hctx)
		hcancel()
		if err == nil {
			return
		}
		select {
		case err := <-s.done:
			s.cancel = nil
			s.t.Fatalf("apiserver exited while starting: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("apiserver at %s not healthy after 60s: %v", s.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server and its etcd, as a kill would, but waits for the
// port and data dir to be released.
func (s *APIServer) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	select {
	case err := <-s.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			s.t.Errorf("apiserver stopped with error: %v", err)
		}
	case <-time.After(30 * time.Second):
		s.t.Errorf("apiserver did not stop within 30s")
	}
	s.cancel = nil
}

// Restart stops and starts the server on the same data dir and address.
func (s *APIServer) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}
