package funcrunner

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/client/cache/cachetest"
	"minik8s/pkg/function"
)

// TestCallbackRefused: a callback to an address that trusts the platform
// is refused, before any attempt when the URL names the address (in any
// spelling), at the dial when a name resolves to it; it is recorded as
// refused with the reason and not retried, and the address gets nothing.
// Only the receiver address the test opened (127.0.0.2) is reached, and
// its redirect inward is not followed.
func TestCallbackRefused(t *testing.T) {
	inward := &receiver{codes: []int{201}}
	admin := startServerOn(t, "127.0.0.1", inward) // stands for the local port
	defer admin.Close()
	_, port, _ := net.SplitHostPort(admin.Listener.Addr().String())
	path := "/api/v1/namespaces/other/configmaps"
	redirect := startReceiver(t, http.RedirectHandler(admin.URL+path, http.StatusTemporaryRedirect))
	defer redirect.Close()

	tests := []struct {
		name, url    string
		wantAttempts int
		want         string
	}{
		{"the local port by address", admin.URL + path, 0, "loopback"},
		{"a name that resolves to it, at the dial", "http://localhost:" + port + path, 1, "loopback"},
		{"IPv4-mapped IPv6", "http://[::ffff:127.0.0.1]:" + port + path, 0, "loopback"},
		{"a decimal spelling", "http://2130706433:" + port + path, 0, "loopback"},
		{"user info", "http://admin:admin@" + receiverAddr + ":" + port + path, 0, "user info"},
		{"not http", "file:///etc/passwd", 0, "http and https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := testCallbacks(5).deliver(context.Background(), endedInstance(tt.url, api.InstanceSucceeded))
			if st.Delivered || st.Attempts != tt.wantAttempts || st.StatusCode != 0 || st.Time == nil ||
				!strings.HasPrefix(st.Error, "callback refused: ") || !strings.Contains(st.Error, tt.want) {
				t.Fatalf("status = %+v, want refused (%q) after %d attempts, not retried", st, tt.want, tt.wantAttempts)
			}
		})
	}
	t.Run("redirects are not followed", func(t *testing.T) {
		st := testCallbacks(5).deliver(context.Background(), endedInstance(redirect.URL, api.InstanceSucceeded))
		if st.Delivered || st.Attempts != 1 || st.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("status = %+v, want the 307 as a final answer", st)
		}
	})
	if got, _ := inward.got(); len(got) != 0 {
		t.Fatalf("the local port's stand-in got %d requests: %q", len(got), got)
	}
}

// TestRunnerEgressGuard: the runner's guard refuses what it learns of the
// cluster (nodes' addresses and pod ranges, Services' cluster IPs, the
// apiserver's endpoints, runners' addresses), its configured ranges, the
// apiserver's and NATS's addresses, and this machine's; it opens only
// what the operator listed; and it follows the caches as they change.
func TestRunnerEgressGuard(t *testing.T) {
	node := &api.Node{ObjectMeta: api.ObjectMeta{Name: "n1"},
		Spec:   api.NodeSpec{PodCIDR: "198.51.100.0/28", PodCIDRs: []string{"198.51.100.0/28", "2001:db8:1::/64"}},
		Status: api.NodeStatus{Addresses: []api.NodeAddress{{Type: "InternalIP", Address: "192.0.2.10"}, {Type: "Hostname", Address: "n1"}}}}
	svc := &api.Service{ObjectMeta: api.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: api.ServiceSpec{ClusterIP: "198.18.5.5"}}
	headless := &api.Service{ObjectMeta: api.ObjectMeta{Name: "h", Namespace: "shop"}, Spec: api.ServiceSpec{ClusterIP: "None"}}
	kube := &api.Endpoints{ObjectMeta: api.ObjectMeta{Name: "kubernetes", Namespace: api.DefaultNamespace},
		Subsets: []api.EndpointSubset{{Addresses: []api.EndpointAddress{{IP: "192.0.2.1"}}}}}
	lease := &api.Lease{ObjectMeta: api.ObjectMeta{Name: "runner-other", Namespace: function.RunnerNamespace,
		Annotations: map[string]string{function.AnnotationRunnerURL: "https://192.0.2.20:7070"}}}

	nodes := cachetest.NewLW(node)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodeInf := cache.NewInformer[api.Node](nodes)
	svcInf := cache.NewInformer[api.Service](cachetest.NewLW(svc, headless))
	epInf := cache.NewInformer[api.Endpoints](cachetest.NewLW(kube))
	leaseInf := cache.NewInformer[api.Lease](cachetest.NewLW(lease))
	for _, inf := range []interface{ Start(context.Context) }{nodeInf, svcInf, epInf, leaseInf} {
		inf.Start(ctx)
	}
	if !cache.WaitForSync(ctx, nodeInf, svcInf, epInf, leaseInf) {
		t.Fatal("caches did not sync")
	}
	cfg := Config{ClusterCIDR: "203.0.113.0/25", ServiceCIDR: "203.0.113.128/25", NATSURL: "nats://192.0.2.30:4222", EgressAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	cfg.setDefaults()
	g, err := newEgressGuard(cfg, "https://192.0.2.1:6443", clusterAddresses{nodes: nodeInf.Lister(),
		services: svcInf.Lister(), eps: epInf.Lister(), leases: leaseInf.Lister()})
	if err != nil {
		t.Fatal(err)
	}
	own, err := netip.ParseAddr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		"192.0.2.10":    "node n1's address",
		"198.51.100.7":  "node n1's pod range",
		"2001:db8:1::7": "node n1's pod range",
		"198.18.5.5":    "Service shop/db's cluster IP",
		"192.0.2.1":     "the apiserver's address",
		"192.0.2.20":    "function runner",
		"192.0.2.30":    "NATS",
		"203.0.113.5":   "the cluster's pod range (--cluster-cidr)",
		"203.0.113.200": "the cluster's service range (--service-cidr)",
		own.String():    "loopback",
		"127.0.0.2":     "",
		"192.0.2.99":    "",
	} {
		err := g.Check(netip.MustParseAddr(addr))
		if want == "" {
			if err != nil {
				t.Errorf("%s: refused: %v", addr, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want a refusal naming %q", addr, err, want)
		}
	}

	// A node that joins is refused as soon as the cache has it.
	joined := &api.Node{ObjectMeta: api.ObjectMeta{Name: "n2"},
		Status: api.NodeStatus{Addresses: []api.NodeAddress{{Type: "InternalIP", Address: "192.0.2.99"}}}}
	joined.ResourceVersion = "2"
	nodes.Events <- client.Event[*api.Node]{Type: api.Added, Object: joined}
	waitFor(t, "node n2 in the cache", func() bool { _, ok := nodeInf.Lister().Get("", "n2"); return ok })
	if err := g.Check(netip.MustParseAddr("192.0.2.99")); err == nil || !strings.Contains(err.Error(), "node n2") {
		t.Errorf("192.0.2.99 after node n2 joined with it: %v, want refused", err)
	}

	if _, err := newEgressGuard(Config{ClusterCIDR: "203.0.113.0/25", ServiceCIDR: "nope"}, "", clusterAddresses{}); err == nil ||
		!strings.Contains(err.Error(), "service-cidr") {
		t.Errorf("a bad --service-cidr: %v, want an error naming it", err)
	}
}
