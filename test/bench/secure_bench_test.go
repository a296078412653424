package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// BenchmarkAPIServerSecurePort measures a GET and a create through the
// secure port (TLS, and a bearer token or the admin's client certificate)
// against the same requests on the local port (plain HTTP), side by side
// on one server, interleaved, each client keeping its connection alive.
// The token's user is authorized by RBAC (edit, bound to it), the
// certificate's is a member of system:masters.
func BenchmarkAPIServerSecurePort(b *testing.B) {
	s := framework.StartSecureAPIServer(b, "bench-token,bench,u1\n")
	admin, err := client.LoadKubeconfig(filepath.Join(s.DataDir, apiserver.AdminKubeconfig))
	if err != nil {
		b.Fatal(err)
	}
	certClient, err := client.NewForConfig(admin)
	if err != nil {
		b.Fatal(err)
	}
	clients := []struct {
		name string
		c    *client.Client
	}{
		{"local", s.Client},
		{"token", s.SecureClient(b, client.Config{Token: "bench-token"})},
		{"cert", certClient},
	}
	ctx := context.Background()
	crb := &api.ClusterRoleBinding{ObjectMeta: api.ObjectMeta{Name: "bench-edit"},
		Subjects: []api.Subject{{Kind: api.UserKind, APIGroup: api.RBACGroup, Name: "bench"}},
		RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.ClusterRoleKind, Name: "edit"}}
	if _, err := s.Client.ClusterRoleBindings().Create(ctx, crb); err != nil {
		b.Fatal(err)
	}
	seed := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "read-me"}, Data: map[string]string{"k": "v"}}
	if _, err := s.Client.ConfigMaps("default").Create(ctx, seed); err != nil {
		b.Fatal(err)
	}
	for _, c := range clients { // warm the connections; the binding reaches the authorizer
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := c.c.ConfigMaps("default").Get(ctx, "read-me")
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	gets := make([][]time.Duration, len(clients))
	creates := make([][]time.Duration, len(clients))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, c := range clients {
			t0 := time.Now()
			if _, err := c.c.ConfigMaps("default").Get(ctx, "read-me"); err != nil {
				b.Fatal(err)
			}
			gets[j] = append(gets[j], time.Since(t0))
			cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("%s-%d", c.name, i)}, Data: map[string]string{"k": "v"}}
			t0 = time.Now()
			if _, err := c.c.ConfigMaps("default").Create(ctx, cm); err != nil {
				b.Fatal(err)
			}
			creates[j] = append(creates[j], time.Since(t0))
		}
	}
	b.StopTimer()
	for j, c := range clients {
		b.ReportMetric(percentile(gets[j], 50), c.name+"-get-p50-ms")
		b.ReportMetric(percentile(creates[j], 50), c.name+"-create-p50-ms")
		if j > 0 {
			b.ReportMetric(percentile(gets[j], 50)/percentile(gets[0], 50), c.name+"-get-ratio")
			b.ReportMetric(percentile(creates[j], 50)/percentile(creates[0], 50), c.name+"-create-ratio")
		}
	}
}
