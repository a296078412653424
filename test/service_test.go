package test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/test/framework"
)

func service(name, ip string) *api.Service {
	return &api.Service{ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.ServiceSpec{ClusterIP: ip, Selector: map[string]string{"app": name}, Ports: []api.ServicePort{{Port: 80}}}}
}

// Cluster IPs: allocated from the service range without duplicates under
// concurrent creates, the one asked for when free and in range (409 naming
// spec.clusterIP when taken, 422 when out of range), immutable, released
// on delete, and kept across an apiserver restart.
func TestServiceClusterIPs(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx := context.Background()
	svcs := srv.Client.Services("default")
	_, svcRange, _ := net.ParseCIDR(srv.ServiceCIDR)
	ip7, ip8 := srv.ServiceIP("200.7"), srv.ServiceIP("200.8")

	var mu sync.Mutex
	owner := map[string]string{}
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := svcs.Create(ctx, service(fmt.Sprintf("s%02d", i), ""))
			if err != nil {
				t.Error(err)
				return
			}
			ip := net.ParseIP(s.Spec.ClusterIP)
			mu.Lock()
			defer mu.Unlock()
			if ip == nil || !svcRange.Contains(ip) {
				t.Errorf("%s got cluster IP %q outside %s", s.Name, s.Spec.ClusterIP, svcRange)
			}
			if other, dup := owner[s.Spec.ClusterIP]; dup {
				t.Errorf("%s given to %s and %s", s.Spec.ClusterIP, other, s.Name)
			}
			owner[s.Spec.ClusterIP] = s.Name
		}()
	}
	wg.Wait()

	asked, err := svcs.Create(ctx, service("asked", ip7))
	if err != nil || asked.Spec.ClusterIP != ip7 {
		t.Fatalf("asking for a free IP: %+v, %v", asked, err)
	}
	_, err = svcs.Create(ctx, service("taken", ip7))
	if !errdefs.IsAlreadyExists(err) || errdefs.Field(err) != "spec.clusterIP" {
		t.Fatalf("asking for a taken IP: %v (field %q), want 409 naming spec.clusterIP", err, errdefs.Field(err))
	}
	_, err = svcs.Create(ctx, service("outside", "127.0.0.99"))
	if !errdefs.IsInvalid(err) || errdefs.Field(err) != "spec.clusterIP" {
		t.Fatalf("asking for an IP out of range: %v, want 422 naming spec.clusterIP", err)
	}

	// Updates keep the address; changing it is refused.
	cur, _ := svcs.Get(ctx, "asked")
	cur.Spec.ClusterIP = ""
	cur.Spec.Ports = []api.ServicePort{{Port: 8080}}
	up, err := svcs.Update(ctx, cur)
	if err != nil || up.Spec.ClusterIP != ip7 {
		t.Fatalf("update leaving clusterIP empty: %+v, %v", up, err)
	}
	up.Spec.ClusterIP = ip8
	if _, err := svcs.Update(ctx, up); !errdefs.IsInvalid(err) || errdefs.Field(err) != "spec.clusterIP" {
		t.Fatalf("changing clusterIP: %v, want 422 naming spec.clusterIP", err)
	}

	// Allocations survive a restart; deletion releases.
	srv.Restart()
	if _, err := svcs.Create(ctx, service("taken", ip7)); !errdefs.IsAlreadyExists(err) {
		t.Fatalf("IP held before the restart was given again: %v", err)
	}
	if _, err := svcs.Delete(ctx, "asked", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := svcs.Create(ctx, service("taken", ip7))
	if err != nil || again.Spec.ClusterIP != ip7 {
		t.Fatalf("IP of a deleted service not released: %v", err)
	}
}
