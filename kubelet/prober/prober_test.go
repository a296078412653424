package prober

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/pkg/api"
)

func TestResolvePort(t *testing.T) {
	ports := []api.ContainerPort{{Name: "http", ContainerPort: 31000}, {ContainerPort: 31001}}
	tests := []struct {
		port    string
		want    int32
		wantErr bool
	}{
		{"8080", 8080, false},
		{"http", 31000, false},
		{"metrics", 0, true},
		{"0", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := ResolvePort(tt.port, ports)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ResolvePort(%q) = %d, %v; want %d, err %v", tt.port, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestWorkerReadinessAndLiveness(t *testing.T) {
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ready" || healthy.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	ports := []api.ContainerPort{{Name: "web", ContainerPort: int32(port)}}
	changed := make(chan struct{}, 16)
	w := Start(context.Background(), host, ports, nil, Probes{
		Readiness: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/ready", Port: "web"}, PeriodSeconds: 1},
		Liveness:  &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/live", Port: api.IntOrString(portStr)}, PeriodSeconds: 1, FailureThreshold: 2}},
		func() { changed <- struct{}{} })
	defer w.Stop()
	deadline := time.After(20 * time.Second)
	for {
		failed, msg := w.LivenessFailed()
		if w.Ready() && failed {
			if msg == "" {
				t.Errorf("no message for the liveness failure")
			}
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("ready %v, liveness failed %v", w.Ready(), failed)
		}
	}
}

func TestWorkerWithoutProbesIsReady(t *testing.T) {
	w := Start(context.Background(), "127.0.0.1", nil, nil, Probes{}, func() {})
	defer w.Stop()
	if !w.Ready() {
		t.Errorf("a container without readiness probe is not ready")
	}
	if failed, _ := w.LivenessFailed(); failed {
		t.Errorf("liveness failed without a probe")
	}
}

// A container that starts serving after its first readiness probe is ready
// as soon as it serves, not a whole period later; after that the period
// holds.
func TestReadinessProbesFastUntilFirstSuccess(t *testing.T) {
	var serving atomic.Bool
	var probes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probes.Add(1)
		if !serving.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	changed := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A period far longer than the test: only the startup interval can
	// make the container ready in time.
	probe := &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/", Port: api.IntOrString(portStr)}, PeriodSeconds: 60, FailureThreshold: 1}
	w := Start(ctx, host, nil, nil, Probes{Readiness: probe}, func() { changed <- struct{}{} })
	time.Sleep(300 * time.Millisecond)
	serving.Store(true)
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("not ready within 30s with a 60s period")
	}
	if !w.Ready() {
		t.Fatal("change reported but not ready")
	}
	after := probes.Load()
	time.Sleep(500 * time.Millisecond)
	if n := probes.Load(); n != after {
		t.Fatalf("%d more probes within half a second after becoming ready: the period no longer holds", n-after)
	}
}

// TestCheckers: a TCP probe passes while the port accepts connections; an
// exec probe passes on exit status 0 and says why it failed otherwise.
func TestCheckers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, open, _ := net.SplitHostPort(l.Addr().String())
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closedPort, _ := net.SplitHostPort(closed.Addr().String())
	closed.Close()
	defer l.Close()
	exec := func(_ context.Context, cmd []string) (int, string, error) {
		switch cmd[0] {
		case "true":
			return 0, "", nil
		case "false":
			return 3, "not yet\n", nil
		}
		return 0, "", errors.New("no such file")
	}
	ports := []api.ContainerPort{{Name: "db", ContainerPort: 1}}
	cases := []struct {
		name    string
		probe   api.Probe
		wantErr string // "" passes
	}{
		{"tcp open", api.Probe{TCPSocket: &api.TCPSocketAction{Port: api.IntOrString(open)}}, ""},
		{"tcp closed", api.Probe{TCPSocket: &api.TCPSocketAction{Port: api.IntOrString(closedPort)}}, "TCP probe of 127.0.0.1:" + closedPort},
		{"tcp named port", api.Probe{TCPSocket: &api.TCPSocketAction{Port: "nope"}}, `no container port is named "nope"`},
		{"exec passes", api.Probe{Exec: &api.ExecAction{Command: []string{"true"}}}, ""},
		{"exec fails", api.Probe{Exec: &api.ExecAction{Command: []string{"false", "x"}}}, `exec probe "false x" exited with 3: not yet`},
		{"exec cannot run", api.Probe{Exec: &api.ExecAction{Command: []string{"missing"}}}, "no such file"},
		{"no handler", api.Probe{}, "one of httpGet, tcpSocket, grpc and exec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check, err := checker("127.0.0.1", &tc.probe, ports, exec, time.Second)
			if err == nil {
				err = check(context.Background())
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestStartupProbe: until the startup probe passes the container is not
// ready and its liveness probe (which would fail) does not run; then
// readiness follows. A startup probe that fails its threshold fails
// liveness, so the kubelet restarts the container.
func TestStartupProbe(t *testing.T) {
	var started atomic.Bool
	exec := func(_ context.Context, cmd []string) (int, string, error) {
		switch cmd[0] {
		case "started":
			if started.Load() {
				return 0, "", nil
			}
			return 1, "not yet", nil
		case "never":
			return 1, "no", nil
		}
		return 0, "", nil // ready, live
	}
	changed := make(chan struct{}, 16)
	w := Start(context.Background(), "127.0.0.1", nil, exec, Probes{
		Startup:   &api.Probe{Exec: &api.ExecAction{Command: []string{"started"}}, PeriodSeconds: 1, FailureThreshold: 30},
		Readiness: &api.Probe{Exec: &api.ExecAction{Command: []string{"ready"}}, PeriodSeconds: 1}},
		func() { changed <- struct{}{} })
	defer w.Stop()
	time.Sleep(1500 * time.Millisecond)
	if w.Ready() {
		t.Fatal("ready before the startup probe passed")
	}
	started.Store(true)
	deadline := time.After(10 * time.Second)
	for !w.Ready() {
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("not ready after the startup probe passed")
		}
	}

	failing := Start(context.Background(), "127.0.0.1", nil, exec, Probes{
		Startup: &api.Probe{Exec: &api.ExecAction{Command: []string{"never"}}, PeriodSeconds: 1, FailureThreshold: 2}},
		func() { changed <- struct{}{} })
	defer failing.Stop()
	deadline = time.After(10 * time.Second)
	for {
		if failed, msg := failing.LivenessFailed(); failed {
			if !strings.Contains(msg, "startup probe failed") {
				t.Errorf("message %q", msg)
			}
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("a failing startup probe did not fail liveness")
		}
	}
	if failing.Ready() {
		t.Error("ready though the startup probe failed")
	}
}
