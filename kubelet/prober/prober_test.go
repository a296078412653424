package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
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
	w := Start(context.Background(), host, ports,
		&api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/ready", Port: "web"}, PeriodSeconds: 1},
		&api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/live", Port: portStr}, PeriodSeconds: 1, FailureThreshold: 2},
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
	w := Start(context.Background(), "127.0.0.1", nil, nil, nil, func() {})
	defer w.Stop()
	if !w.Ready() {
		t.Errorf("a container without readiness probe is not ready")
	}
	if failed, _ := w.LivenessFailed(); failed {
		t.Errorf("liveness failed without a probe")
	}
}
