package apiserver

import (
	"context"
	"net"
	"testing"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// TestLoopbackEndpoints: an Endpoints address on the loopback is refused
// as Kubernetes refuses it (a Service leading to a node's local port),
// unless it is a node's address or the apiserver's secure port; nothing
// refused is stored.
func TestLoopbackEndpoints(t *testing.T) {
	ctx := context.Background()
	s := New(Config{}, etcdtest.Start(t))
	if err := s.namespaces.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	node := &api.Node{ObjectMeta: api.ObjectMeta{Name: "n1"},
		Status: api.NodeStatus{Addresses: []api.NodeAddress{{Type: api.NodeInternalIP, Address: "127.0.0.7"}}}}
	if _, err := s.registries[api.NodesResource.Name].Create(ctx, "", node); err != nil {
		t.Fatal(err)
	}
	s.selfEndpoint.Store(net.JoinHostPort("127.0.0.1", "6443"))
	eps := s.registries[api.EndpointsResource.Name]
	for _, tc := range []struct {
		name, ip string
		port     int32
		field    string
	}{
		{"the local port", "127.0.0.1", 8080, "subsets[0].addresses[0].ip"},
		{"another loopback address", "127.0.0.9", 80, "subsets[0].addresses[0].ip"},
		{"link-local", "169.254.169.254", 80, "subsets[0].addresses[0].ip"},
		{"a node's address", "127.0.0.7", 8080, ""},
		{"the secure port", "127.0.0.1", 6443, ""},
		{"elsewhere", "192.0.2.10", 8080, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := &api.Endpoints{ObjectMeta: api.ObjectMeta{Name: "e"}, Subsets: []api.EndpointSubset{{
				Addresses: []api.EndpointAddress{{IP: tc.ip}}, Ports: []api.EndpointPort{{Port: tc.port}}}}}
			_, err := eps.Create(ctx, "default", ep)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := eps.Delete(ctx, "default", "e", registry.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errdefs.IsInvalid(err) || errdefs.Field(err) != tc.field {
				t.Fatalf("got %v, want 422 naming %s", err, tc.field)
			}
			if _, err := eps.Get(ctx, "default", "e"); !errdefs.IsNotFound(err) {
				t.Fatalf("refused endpoints stored: %v", err)
			}
		})
	}
	// An update to the loopback is refused the same way.
	ep := &api.Endpoints{ObjectMeta: api.ObjectMeta{Name: "u"}, Subsets: []api.EndpointSubset{{
		Addresses: []api.EndpointAddress{{IP: "192.0.2.10"}}, Ports: []api.EndpointPort{{Port: 80}}}}}
	if _, err := eps.Create(ctx, "default", ep); err != nil {
		t.Fatal(err)
	}
	ep.Subsets[0].NotReadyAddresses = []api.EndpointAddress{{IP: "127.0.0.1"}}
	if _, err := eps.Update(ctx, "default", "u", ep); !errdefs.IsInvalid(err) || errdefs.Field(err) != "subsets[0].notReadyAddresses[0].ip" {
		t.Fatalf("update to the loopback: %v", err)
	}
}
