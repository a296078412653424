package apiserver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"minik8s/apiserver/alloc"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
	"minik8s/pkg/storage/etcd/etcdtest"
)

func svc(name, ip string) *api.Service {
	return &api.Service{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: "uid-" + name},
		Spec: api.ServiceSpec{ClusterIP: ip, Ports: []api.ServicePort{{Port: 80}}}}
}

// serviceRegistry is the Services registry of a server over store.
func serviceRegistry(t *testing.T, store storage.Interface, cidr string) *registry.Store {
	t.Helper()
	return newTestServer(t, store, cidr).registries[api.ServicesResource.Name]
}

// newTestServer is a server over store that serves nothing, with its
// built-in namespaces made.
func newTestServer(t *testing.T, store storage.Interface, cidr string) *Server {
	t.Helper()
	s := New(Config{ServiceCIDR: cidr}, store)
	if err := s.namespaces.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func createSvc(ctx context.Context, reg *registry.Store, name, ip string) (string, error) {
	obj, err := reg.Create(ctx, "default", &api.Service{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.ServiceSpec{ClusterIP: ip, Ports: []api.ServicePort{{Port: 80}}}})
	if err != nil {
		return "", err
	}
	return obj.(*api.Service).Spec.ClusterIP, nil
}

func allocations(t *testing.T, store storage.Interface) map[string]string {
	t.Helper()
	objs, _, err := store.List(context.Background(), alloc.ClusterIPPrefix, func() api.Object { return &alloc.IPAllocation{} })
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range objs {
		a := o.(*alloc.IPAllocation)
		out[a.Name] = a.Service.Name
	}
	return out
}

// inServiceRange says whether ip is a usable address of reg's range.
func inServiceRange(reg *registry.Store, ip string) bool {
	_, err := reg.IPs.Canonical(ip)
	return err == nil
}

func TestAllocatorExhaustsAndReuses(t *testing.T) {
	store := etcdtest.Start(t)
	reg := serviceRegistry(t, store, "127.1.2.0/29")
	ctx := context.Background()
	got := map[string]bool{}
	for i := 0; i < 6; i++ {
		ip, err := createSvc(ctx, reg, fmt.Sprintf("s%d", i), "")
		if err != nil {
			t.Fatal(err)
		}
		if got[ip] || !inServiceRange(reg, ip) || ip == "127.1.2.0" || ip == "127.1.2.7" {
			t.Fatalf("allocated %s (have %v)", ip, got)
		}
		got[ip] = true
	}
	if _, err := createSvc(ctx, reg, "s6", ""); !errdefs.IsConflict(err) {
		t.Fatalf("full range: err %v, want a conflict", err)
	}
	// Only the holder's release frees an address.
	victim := ""
	for ip, name := range allocations(t, store) {
		if name == "s2" {
			victim = ip
		}
	}
	reg.IPs.Release(ctx, victim, "uid-someone-else")
	if _, err := createSvc(ctx, reg, "s6", ""); err == nil {
		t.Fatal("an address was freed by a release of another service")
	}
	if _, err := reg.Delete(ctx, "default", "s2", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ip, err := createSvc(ctx, reg, "s6", "")
	if err != nil || ip != victim {
		t.Fatalf("after the delete: %q, %v; want %s", ip, err, victim)
	}
}

// Two servers on one etcd never give one address to two Services.
func TestConcurrentAllocationsAreDistinct(t *testing.T) {
	store := etcdtest.Start(t)
	regs := []*registry.Store{serviceRegistry(t, store, "127.1.3.0/26"), serviceRegistry(t, store, "127.1.3.0/26")}
	ctx := context.Background()
	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("s%d", i)
			ip, err := createSvc(ctx, regs[i%2], name, "")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if other, dup := got[ip]; dup {
				t.Errorf("%s given to both %s and %s", ip, other, name)
			}
			got[ip] = name
		}()
	}
	wg.Wait()
	if len(got) != 60 {
		t.Fatalf("%d addresses for 60 services", len(got))
	}
}

// An address whose Service is gone (an apiserver that died between the
// delete and the release) goes back to the pool: at once when the range
// is full, and in the periodic repair.
func TestRepairReclaimsLeakedAddresses(t *testing.T) {
	store := etcdtest.Start(t)
	reg := serviceRegistry(t, store, "127.1.4.0/30") // two addresses
	ctx := context.Background()
	leaked := reg.IPs.Item("127.1.4.1", svc("ghost", ""))
	if err := store.Create(ctx, leaked.Key, leaked.Object, 0); err != nil {
		t.Fatal(err)
	}
	if ip, err := createSvc(ctx, reg, "real", ""); err != nil || ip != "127.1.4.2" {
		t.Fatalf("create = %q, %v; want 127.1.4.2", ip, err)
	}
	ip, err := createSvc(ctx, reg, "new", "")
	if err != nil || ip != "127.1.4.1" {
		t.Fatalf("create on a full range with a leak = %q, %v; want the leaked 127.1.4.1", ip, err)
	}

	// The periodic repair, without waiting for the range to fill.
	leaked = reg.IPs.Item("127.1.4.9", svc("ghost2", ""))
	if err := store.Create(ctx, leaked.Key, leaked.Object, 0); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); reg.IPs.RunRepair(rctx, time.Hour) }()
	deadline := time.Now().Add(10 * time.Second)
	for allocations(t, store)["127.1.4.9"] != "" {
		if time.Now().After(deadline) {
			t.Fatal("the repair loop left a leaked address")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if a := allocations(t, store); a["127.1.4.1"] != "new" || a["127.1.4.2"] != "real" {
		t.Fatalf("the repair took addresses Services hold: %v", a)
	}
}

// The registry hooks: allocate on create, keep on update, release on delete.
func TestServiceRegistryClusterIPs(t *testing.T) {
	s := newTestServer(t, etcdtest.Start(t), "127.1.5.0/29")
	reg := s.registries[api.ServicesResource.Name]
	ctx := context.Background()
	create := func(name, ip string) (*api.Service, error) {
		obj, err := reg.Create(ctx, "default", &api.Service{ObjectMeta: api.ObjectMeta{Name: name},
			Spec: api.ServiceSpec{ClusterIP: ip, Ports: []api.ServicePort{{Port: 80}}}})
		if err != nil {
			return nil, err
		}
		return obj.(*api.Service), nil
	}
	a, err := create("a", "")
	if err != nil || a.Spec.ClusterIP == "" {
		t.Fatalf("create without IP: %+v, %v", a, err)
	}
	b, err := create("b", "127.1.5.4")
	if err != nil || b.Spec.ClusterIP != "127.1.5.4" {
		t.Fatalf("create with a free IP: %+v, %v", b, err)
	}
	if _, err := create("c", "127.1.5.4"); !errdefs.IsAlreadyExists(err) || errdefs.Field(err) != "spec.clusterIP" {
		t.Fatalf("taken IP: %v", err)
	}
	for _, ip := range []string{"127.9.0.1", "127.1.5.0", "127.1.5.7"} { // out of range, network, broadcast
		if _, err := create("c", ip); !errdefs.IsInvalid(err) || errdefs.Field(err) != "spec.clusterIP" {
			t.Fatalf("IP %s: %v", ip, err)
		}
	}
	if h, err := create("headless", "None"); err != nil || h.Spec.ClusterIP != "None" {
		t.Fatalf("headless: %+v, %v", h, err)
	}
	// A refused create (the name is taken) writes nothing.
	before := allocations(t, reg.Storage)
	if _, err := create("a", "127.1.5.6"); !errdefs.IsAlreadyExists(err) {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := create("a", ""); !errdefs.IsAlreadyExists(err) {
		t.Fatalf("duplicate name, no IP asked: %v", err)
	}
	if after := allocations(t, reg.Storage); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("refused creates changed the allocations: %v, then %v", before, after)
	}
	if c, err := create("c", "127.1.5.6"); err != nil || c.Spec.ClusterIP != "127.1.5.6" {
		t.Fatalf("address of the failed create not released: %v", err)
	}

	up := &api.Service{ObjectMeta: api.ObjectMeta{Name: "a"}, Spec: api.ServiceSpec{Ports: []api.ServicePort{{Port: 81}}}}
	obj, err := reg.Update(ctx, "default", "a", up)
	if err != nil || obj.(*api.Service).Spec.ClusterIP != a.Spec.ClusterIP {
		t.Fatalf("update leaving clusterIP empty: %+v, %v", obj, err)
	}
	up.Spec.ClusterIP = "127.1.5.5"
	if _, err := reg.Update(ctx, "default", "a", up); !errdefs.IsInvalid(err) || errdefs.Field(err) != "spec.clusterIP" {
		t.Fatalf("changing clusterIP: %v", err)
	}

	if _, err := reg.Delete(ctx, "default", "b", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, err := create("d", "127.1.5.4"); err != nil || d.Spec.ClusterIP != "127.1.5.4" {
		t.Fatalf("address of a deleted service not released: %v", err)
	}
}
