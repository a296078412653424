package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

// The probe's own fields reach the check: its scheme, its headers (a Host
// header naming the virtual host), its host, and gRPC's health service.
func TestCheckerFields(t *testing.T) {
	hostSeen := make(chan string, 4)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hostSeen <- r.Host
		if r.Header.Get("X-Probe") != "yes" {
			w.WriteHeader(http.StatusForbidden)
		}
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewTLSServer(handler)
	defer secure.Close()
	port := func(s *httptest.Server) api.IntOrString {
		_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
		return api.IntOrString(p)
	}
	var h2 http.Protocols
	h2.SetUnencryptedHTTP2(true)
	h2c := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			w.WriteHeader(http.StatusHTTPVersionNotSupported)
		}
	}))
	h2c.Config.Protocols = &h2
	h2c.Start()
	defer h2c.Close()
	http2 := corev1.HTTPProtocolHTTP2
	headers := []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}, {Name: "host", Value: "web.example"}}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	gport := int32(lis.Addr().(*net.TCPAddr).Port)
	str := func(s string) *string { return &s }

	for _, tc := range []struct {
		name     string
		host     string // the pod's address
		probe    api.Probe
		ok       bool
		wantHost string
	}{
		{"headers", "127.0.0.1", api.Probe{HTTPGet: &api.HTTPGetAction{Port: port(plain), HTTPHeaders: headers}}, true, "web.example"},
		{"no header", "127.0.0.1", api.Probe{HTTPGet: &api.HTTPGetAction{Port: port(plain)}}, false, ""},
		{"https unverified", "127.0.0.1", api.Probe{HTTPGet: &api.HTTPGetAction{Port: port(secure), Scheme: "HTTPS", HTTPHeaders: headers}}, true, "web.example"},
		{"http to https", "127.0.0.1", api.Probe{HTTPGet: &api.HTTPGetAction{Port: port(secure), HTTPHeaders: headers}}, false, ""},
		{"own host", "127.0.0.9", api.Probe{HTTPGet: &api.HTTPGetAction{Host: "127.0.0.1", Port: port(plain), HTTPHeaders: headers[:1]}}, true, "127.0.0.1:" + string(port(plain))},
		{"h2c", "127.0.0.1", api.Probe{HTTPGet: &api.HTTPGetAction{Port: port(h2c), Protocol: &http2}}, true, ""},
		{"h2c spoken to in HTTP/1.1", "127.0.0.1", api.Probe{HTTPGet: &api.HTTPGetAction{Port: port(h2c)}}, false, ""},
		{"tcp own host", "127.0.0.9", api.Probe{TCPSocket: &api.TCPSocketAction{Host: "127.0.0.1", Port: port(plain)}}, true, ""},
		{"grpc server", "127.0.0.1", api.Probe{GRPC: &corev1.GRPCAction{Port: gport}}, true, ""},
		{"grpc serving", "127.0.0.1", api.Probe{GRPC: &corev1.GRPCAction{Port: gport, Service: str("up")}}, true, ""},
		{"grpc not serving", "127.0.0.1", api.Probe{GRPC: &corev1.GRPCAction{Port: gport, Service: str("down")}}, false, ""},
		{"grpc unknown service", "127.0.0.1", api.Probe{GRPC: &corev1.GRPCAction{Port: gport, Service: str("nope")}}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, err := checker(tc.host, &tc.probe, nil, nil, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			err = check(context.Background())
			if (err == nil) != tc.ok {
				t.Fatalf("check: %v, want ok %v", err, tc.ok)
			}
			if tc.wantHost != "" {
				if got := <-hostSeen; got != tc.wantHost {
					t.Errorf("Host %q, want %q", got, tc.wantHost)
				}
			}
			for len(hostSeen) > 0 {
				<-hostSeen
			}
		})
	}
}

// A container killed by a probe gets that probe's grace when it has one.
func TestKillGrace(t *testing.T) {
	g := int64(3)
	w := &Worker{}
	if got := w.KillGrace(time.Minute); got != time.Minute {
		t.Errorf("no failure: %v", got)
	}
	w.failLiveness(&api.Probe{TerminationGracePeriodSeconds: &g}, "x", func() {})
	if got := w.KillGrace(time.Minute); got != 3*time.Second {
		t.Errorf("probe grace: %v", got)
	}
	w = &Worker{}
	w.failLiveness(&api.Probe{}, "x", func() {})
	if got := w.KillGrace(time.Minute); got != time.Minute {
		t.Errorf("probe without grace: %v", got)
	}
}
