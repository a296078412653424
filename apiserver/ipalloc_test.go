package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
	"minik8s/pkg/storage/etcd"
)

func testStore(t *testing.T) storage.Interface {
	t.Helper()
	e, err := etcd.StartEmbedded(context.Background(), filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := etcd.NewClient(e.Endpoints)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		e.Close()
	})
	return etcd.New(c)
}

func svc(name, ip string) *api.Service {
	return &api.Service{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: "uid-" + name},
		Spec: api.ServiceSpec{ClusterIP: ip, Ports: []api.ServicePort{{Port: 80}}}}
}

func TestParseServiceCIDR(t *testing.T) {
	tests := []struct {
		cidr string
		ok   bool
	}{
		{"127.1.0.0/16", true}, {"127.64.0.0/12", true}, {"127.1.0.0/30", true},
		{"127.1.0.0/31", false}, {"fd00::/64", false}, {"127.1.0.0", false}, {"", false},
	}
	for _, tt := range tests {
		_, err := ParseServiceCIDR(tt.cidr)
		if (err == nil) != tt.ok {
			t.Errorf("ParseServiceCIDR(%q) = %v, want ok %v", tt.cidr, err, tt.ok)
		}
		if err != nil && !errdefs.IsInvalid(err) {
			t.Errorf("ParseServiceCIDR(%q): error %v is not Invalid", tt.cidr, err)
		}
	}
}

func TestAllocatorExhaustsAndReuses(t *testing.T) {
	a, err := newIPAllocator(testStore(t), "127.1.2.0/29")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got := map[string]bool{}
	for i := 0; i < 6; i++ {
		ip, err := a.allocateNext(ctx, svc(fmt.Sprintf("s%d", i), ""))
		if err != nil {
			t.Fatal(err)
		}
		if got[ip] || !a.inRange(net.ParseIP(ip)) || ip == "127.1.2.0" || ip == "127.1.2.7" {
			t.Fatalf("allocated %s (have %v)", ip, got)
		}
		got[ip] = true
	}
	if _, err := a.allocateNext(ctx, svc("s6", "")); !errdefs.IsConflict(err) {
		t.Fatalf("full range: err %v, want a conflict", err)
	}
	// Only the holder's release frees an address.
	a.release(ctx, "127.1.2.3", "uid-someone-else")
	if _, err := a.allocateNext(ctx, svc("s6", "")); err == nil {
		t.Fatal("an address was freed by a release of another service")
	}
	a.release(ctx, "127.1.2.3", "uid-s2")
	ip, err := a.allocateNext(ctx, svc("s6", ""))
	if err != nil || ip != "127.1.2.3" {
		t.Fatalf("after release: %q, %v", ip, err)
	}
}

func TestAllocateSpecific(t *testing.T) {
	a, err := newIPAllocator(testStore(t), DefaultServiceCIDR)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.allocate(ctx, svc("a", "127.1.0.5"), "127.1.0.5"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ip    string
		class error
	}{
		{"127.1.0.5", errdefs.ErrAlreadyExists},
		{"127.2.0.5", errdefs.ErrInvalid},
		{"127.1.0.0", errdefs.ErrInvalid},     // the network address
		{"127.1.255.255", errdefs.ErrInvalid}, // the broadcast address
	}
	for _, tt := range tests {
		err := a.allocate(ctx, svc("b", tt.ip), tt.ip)
		if !errors.Is(err, tt.class) || errdefs.Field(err) != "spec.clusterIP" {
			t.Errorf("allocate %s: %v (field %q), want %v naming spec.clusterIP", tt.ip, err, errdefs.Field(err), tt.class)
		}
	}
	// The next free address skips the taken one.
	a.next = 4
	ip, err := a.allocateNext(ctx, svc("c", ""))
	if err != nil || ip != "127.1.0.6" {
		t.Fatalf("allocateNext = %q, %v; want 127.1.0.6", ip, err)
	}
}

func TestConcurrentAllocationsAreDistinct(t *testing.T) {
	store := testStore(t)
	// Two allocators stand for two apiservers on one etcd.
	a1, _ := newIPAllocator(store, "127.1.3.0/26")
	a2, _ := newIPAllocator(store, "127.1.3.0/26")
	ctx := context.Background()
	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := a1
			if i%2 == 1 {
				a = a2
			}
			name := fmt.Sprintf("s%d", i)
			ip, err := a.allocateNext(ctx, svc(name, ""))
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

func TestRepairReclaimsLeakedAddresses(t *testing.T) {
	store := testStore(t)
	a, _ := newIPAllocator(store, "127.1.4.0/30") // two addresses
	ctx := context.Background()
	// An allocation whose Service was never stored, made long ago.
	leaked := a.record("127.1.4.1", svc("ghost", ""))
	old := time.Now().Add(-time.Hour)
	leaked.CreationTimestamp = &old
	if err := store.Create(ctx, ipAllocPrefix+"127.1.4.1", leaked, 0); err != nil {
		t.Fatal(err)
	}
	// And one held by a stored Service.
	held := svc("real", "127.1.4.2")
	if err := a.allocate(ctx, held, "127.1.4.2"); err != nil {
		t.Fatal(err)
	}
	if err := store.Create(ctx, keyRoot+"services/default/real", held, 0); err != nil {
		t.Fatal(err)
	}
	ip, err := a.allocateNext(ctx, svc("new", ""))
	if err != nil || ip != "127.1.4.1" {
		t.Fatalf("allocateNext on a full range with a leak = %q, %v; want the leaked 127.1.4.1", ip, err)
	}
}

// The registry hooks: allocate on create, keep on update, release on delete.
func TestServiceRegistryClusterIPs(t *testing.T) {
	s := New(Config{ServiceCIDR: "127.1.5.0/29"}, testStore(t))
	reg := s.registries[api.ServicesResource.Name]
	ctx := context.Background()
	create := func(name, ip string) (*api.Service, error) {
		obj, err := reg.create(ctx, "default", &api.Service{ObjectMeta: api.ObjectMeta{Name: name},
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
	if _, err := create("c", "127.9.0.1"); !errdefs.IsInvalid(err) || errdefs.Field(err) != "spec.clusterIP" {
		t.Fatalf("IP out of range: %v", err)
	}
	if h, err := create("headless", "None"); err != nil || h.Spec.ClusterIP != "None" {
		t.Fatalf("headless: %+v, %v", h, err)
	}
	// A failed create (the name is taken) gives its address back.
	if _, err := create("a", "127.1.5.6"); !errdefs.IsAlreadyExists(err) {
		t.Fatalf("duplicate name: %v", err)
	}
	if c, err := create("c", "127.1.5.6"); err != nil || c.Spec.ClusterIP != "127.1.5.6" {
		t.Fatalf("address of the failed create not released: %v", err)
	}

	up := &api.Service{ObjectMeta: api.ObjectMeta{Name: "a"}, Spec: api.ServiceSpec{Ports: []api.ServicePort{{Port: 81}}}}
	obj, err := reg.update(ctx, "default", "a", up)
	if err != nil || obj.(*api.Service).Spec.ClusterIP != a.Spec.ClusterIP {
		t.Fatalf("update leaving clusterIP empty: %+v, %v", obj, err)
	}
	up.Spec.ClusterIP = "127.1.5.5"
	if _, err := reg.update(ctx, "default", "a", up); !errdefs.IsInvalid(err) || errdefs.Field(err) != "spec.clusterIP" {
		t.Fatalf("changing clusterIP: %v", err)
	}

	if _, err := reg.delete(ctx, "default", "b", deleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if d, err := create("d", "127.1.5.4"); err != nil || d.Spec.ClusterIP != "127.1.5.4" {
		t.Fatalf("address of a deleted service not released: %v", err)
	}
}
