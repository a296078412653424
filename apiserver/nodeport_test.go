package apiserver

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// TestNodePorts: a NodePort Service gets a distinct node port per port
// with its cluster IP, concurrently too; asked ports are kept or refused
// by name; updates keep them; deletion frees them.
func TestNodePorts(t *testing.T) {
	store := etcdtest.Start(t)
	s := New(Config{ServiceCIDR: "127.1.6.0/24", ServiceNodePortRange: "30000-30005"}, store)
	if err := s.namespaces.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := s.registries[api.ServicesResource.Name]
	ctx := context.Background()
	create := func(name, typ string, nodePorts ...int32) (*api.Service, error) {
		svc := &api.Service{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.ServiceSpec{Type: typ}}
		for i, np := range nodePorts {
			svc.Spec.Ports = append(svc.Spec.Ports, api.ServicePort{Name: string(rune('a' + i)), Port: 80 + int32(i), NodePort: np})
		}
		obj, err := reg.Create(ctx, "default", svc)
		if err != nil {
			return nil, err
		}
		return obj.(*api.Service), nil
	}

	// Two ports, one asked; three Services at once take what is left.
	two, err := create("two", "NodePort", 30003, 0)
	if err != nil || two.Spec.Ports[0].NodePort != 30003 || two.Spec.Ports[1].NodePort == 0 || two.Spec.ClusterIP == "" {
		t.Fatalf("two ports: %+v, %v", two, err)
	}
	var wg sync.WaitGroup
	got := make(chan int32, 3)
	for _, name := range []string{"p", "q", "r"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc, err := create(name, "NodePort", 0)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			got <- svc.Spec.Ports[0].NodePort
		}()
	}
	wg.Wait()
	close(got)
	seen := map[int32]bool{two.Spec.Ports[0].NodePort: true, two.Spec.Ports[1].NodePort: true}
	for np := range got {
		if seen[np] || np < 30000 || np > 30005 {
			t.Fatalf("node port %d given twice or out of the range (%v)", np, seen)
		}
		seen[np] = true
	}
	// One port is left: a Service asking two fails whole, leaving it.
	if _, err := create("greedy", "NodePort", 0, 0); err == nil || !errdefs.IsConflict(err) {
		t.Fatalf("more ports than are left: %v", err)
	}
	last, err := create("last", "NodePort", 0)
	if err != nil {
		t.Fatalf("the last port after a refused create: %v", err)
	}

	for _, tc := range []struct {
		name, typ string
		ports     []int32
		field     string
		check     func(error) bool
	}{
		{"taken", "NodePort", []int32{30003}, "spec.ports[0].nodePort", errdefs.IsAlreadyExists},
		{"outside", "NodePort", []int32{31000}, "spec.ports[0].nodePort", errdefs.IsInvalid},
		{"clusterip", "ClusterIP", []int32{30001}, "spec.ports[0].nodePort", errdefs.IsInvalid},
		{"twice", "NodePort", []int32{30001, 30001}, "spec.ports[1].nodePort", errdefs.IsInvalid},
	} {
		if _, err := create(tc.name, tc.typ, tc.ports...); !tc.check(err) || errdefs.Field(err) != tc.field {
			t.Errorf("%s: %v (field %q), want field %q", tc.name, err, errdefs.Field(err), tc.field)
		}
	}

	// An update without node ports keeps them; changing one is refused.
	up := &api.Service{ObjectMeta: api.ObjectMeta{Name: "two"}, Spec: api.ServiceSpec{Type: "NodePort", ClusterIP: two.Spec.ClusterIP,
		Ports: []api.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 81}}}}
	obj, err := reg.Update(ctx, "default", "two", up)
	if err != nil || obj.(*api.Service).Spec.Ports[1].NodePort != two.Spec.Ports[1].NodePort {
		t.Fatalf("update without node ports: %+v, %v", obj, err)
	}
	up.Spec.Ports[0].NodePort = 30004
	if _, err := reg.Update(ctx, "default", "two", up); !errdefs.IsInvalid(err) || errdefs.Field(err) != "spec.ports[0].nodePort" {
		t.Fatalf("update changing a node port: %v", err)
	}

	// Deleting a Service frees its ports.
	if _, err := reg.Delete(ctx, "default", "last", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := create("again", "NodePort", last.Spec.Ports[0].NodePort)
	if err != nil || again.Spec.Ports[0].NodePort != last.Spec.Ports[0].NodePort {
		t.Fatalf("the port of a deleted Service: %+v, %v", again, err)
	}
}

// TestNodePortsTooMany: a NodePort Service of more ports than one etcd
// transaction holds is a 422 naming spec.ports, nothing stored (it was
// etcd's 503); one of as many as it holds is made.
func TestNodePortsTooMany(t *testing.T) {
	store := etcdtest.Start(t)
	s := New(Config{ServiceCIDR: "127.1.7.0/24", ServiceNodePortRange: DefaultServiceNodePortRange}, store)
	if err := s.namespaces.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := s.registries[api.ServicesResource.Name]
	ctx := context.Background()
	service := func(name string, ports int) *api.Service {
		svc := &api.Service{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.ServiceSpec{Type: "NodePort"}}
		for i := range ports {
			svc.Spec.Ports = append(svc.Spec.Ports, api.ServicePort{Name: fmt.Sprintf("p%d", i), Port: int32(1000 + i)})
		}
		return svc
	}
	for _, n := range []int{2000, registry.MaxNodePorts + 1} {
		_, err := reg.Create(ctx, "default", service("many", n))
		io, ok := errdefs.AsInvalidObject(err)
		if !ok || len(io.Causes) != 1 || io.Causes[0].Field != "spec.ports" || io.Causes[0].Type != "FieldValueTooMany" {
			t.Fatalf("%d node ports: %v, want 422 too many on spec.ports", n, err)
		}
		if _, err := reg.Get(ctx, "default", "many"); !errdefs.IsNotFound(err) {
			t.Fatalf("a refused Service was stored: %v", err)
		}
	}
	svc, err := reg.Create(ctx, "default", service("most", registry.MaxNodePorts))
	if err != nil || svc.(*api.Service).Spec.Ports[registry.MaxNodePorts-1].NodePort == 0 {
		t.Fatalf("%d node ports: %v", registry.MaxNodePorts, err)
	}
}
