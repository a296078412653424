package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"minik8s/kubelet/proxy"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// backend serves its own name over HTTP on a free loopback port.
func backend(t *testing.T, name string) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return int32(l.Addr().(*net.TCPAddr).Port)
}

func get(addr string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// eventually polls fn until it holds or 10s pass.
func eventually(t *testing.T, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestProxyBalancesAndFollowsEndpoints(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := backend(t, "a"), backend(t, "b")
	ip := s.ServiceIP("77.7")
	svc := &api.Service{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ServiceSpec{ClusterIP: ip, Ports: []api.ServicePort{{Name: "http", Port: 8080, TargetPort: "http"}}}}
	if _, err := s.Client.Services("default").Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	// The backends are pods of a node on the loopback, sharing its address.
	s.EnsureNode(t, "n1", "127.0.0.1")
	ep := &api.Endpoints{ObjectMeta: api.ObjectMeta{Name: "web"}, Subsets: []api.EndpointSubset{{
		Addresses: []api.EndpointAddress{{IP: "127.0.0.1", Port: a}, {IP: "127.0.0.1", Port: b}},
		Ports:     []api.EndpointPort{{Name: "http", Port: 8080}},
	}}}
	created, err := s.Client.Endpoints("default").Create(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}

	// Two proxies share the address, as two kubelets on one machine do.
	pctx1, stop1 := context.WithCancel(ctx)
	stopped1 := make(chan struct{})
	go func() {
		defer close(stopped1)
		proxy.NewFromClient(s.Client).Run(pctx1)
	}()
	go proxy.NewFromClient(s.Client).Run(ctx)

	addr := net.JoinHostPort(ip, "8080")
	seen := map[string]int{}
	eventually(t, "both endpoints answering through the cluster IP", func() bool {
		if body, err := get(addr); err == nil {
			seen[body]++
		}
		return seen["a"] > 0 && seen["b"] > 0
	})

	// An endpoint that leaves gets no more connections.
	created.Subsets[0].Addresses = created.Subsets[0].Addresses[1:]
	if _, err := s.Client.Endpoints("default").Update(ctx, created); err != nil {
		t.Fatal(err)
	}
	eventually(t, "traffic to move to b only", func() bool {
		for i := 0; i < 10; i++ {
			if body, err := get(addr); err != nil || body != "b" {
				return false
			}
		}
		return true
	})

	// One proxy stops: the other keeps answering.
	stop1()
	<-stopped1 // its listeners closed
	for i := 0; i < 20; i++ {
		if body, err := get(addr); err != nil || body != "b" {
			t.Fatalf("after one proxy stopped: %q %v", body, err)
		}
	}

	// Deleting the service closes its address.
	if _, err := s.Client.Services("default").Delete(ctx, "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cluster IP to stop answering", func() bool {
		_, err := get(addr)
		return err != nil
	})
}
