package pod

import (
	"errors"
	"testing"

	"minik8s/pkg/api"
)

func TestPodResolver(t *testing.T) {
	cluster := DNSConfig{Server: "198.51.100.1", Domain: "cluster.local"}
	nodeConf := parseResolver([]byte("# the node's\ndomain example.org\nsearch corp.example lab.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54 ; second\noptions edns0 ndots:1\n"))
	node := func() (resolver, error) { return nodeConf, nil }
	two := "2"
	clusterConf := "search web.svc.cluster.local svc.cluster.local cluster.local\nnameserver 198.51.100.1\noptions ndots:5\n"
	for _, tc := range []struct {
		name       string
		policy     string
		dnsConfig  *api.PodDNSConfig
		cluster    DNSConfig
		ownNetwork bool
		want       string // "" with own false: the node's file as it is
	}{
		{name: "ClusterFirst on the pod's network", policy: api.DNSClusterFirst, cluster: cluster, ownNetwork: true, want: clusterConf},
		{name: "no policy is ClusterFirst", cluster: cluster, ownNetwork: true, want: clusterConf},
		{name: "ClusterFirst on the node's network is the node's", policy: api.DNSClusterFirst, cluster: cluster},
		{name: "ClusterFirstWithHostNet on the node's network", policy: api.DNSClusterFirstWithHostNet, cluster: cluster, want: clusterConf},
		{name: "ClusterFirst without a cluster DNS is the node's", policy: api.DNSClusterFirst, ownNetwork: true},
		{name: "Default is the node's", policy: api.DNSDefault, cluster: cluster, ownNetwork: true},
		{name: "Default with dnsConfig adds to the node's", policy: api.DNSDefault, cluster: cluster, ownNetwork: true,
			dnsConfig: &api.PodDNSConfig{Nameservers: []string{"192.0.2.99", "192.0.2.53"}, Searches: []string{"extra.example"},
				Options: []api.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "rotate"}}},
			want: "search corp.example lab.example extra.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nnameserver 192.0.2.99\noptions edns0 ndots:2 rotate\n"},
		{name: "None is dnsConfig alone", policy: api.DNSNone, cluster: cluster, ownNetwork: true,
			dnsConfig: &api.PodDNSConfig{Nameservers: []string{"192.0.2.7"}, Searches: []string{"a.example"}},
			want:      "search a.example\nnameserver 192.0.2.7\n"},
		{name: "ClusterFirst with dnsConfig, nameservers cut at three", policy: api.DNSClusterFirst, cluster: cluster, ownNetwork: true,
			dnsConfig: &api.PodDNSConfig{Nameservers: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}, Options: []api.PodDNSConfigOption{{Name: "ndots", Value: &two}}},
			want:      "search web.svc.cluster.local svc.cluster.local cluster.local\nnameserver 198.51.100.1\nnameserver 192.0.2.1\nnameserver 192.0.2.2\noptions ndots:2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "web", Name: "p"}, Spec: api.PodSpec{DNSPolicy: tc.policy, DNSConfig: tc.dnsConfig}}
			r, own, err := podResolver(p, tc.cluster, tc.ownNetwork, node)
			if err != nil {
				t.Fatal(err)
			}
			if own != (tc.want != "") || own != hasOwnResolvConf(p, tc.cluster, tc.ownNetwork) {
				t.Fatalf("own file %v (hasOwnResolvConf %v), want %v", own, hasOwnResolvConf(p, tc.cluster, tc.ownNetwork), tc.want != "")
			}
			if got := r.String(); own && got != tc.want {
				t.Errorf("resolv.conf:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestPodResolverNodeUnreadable(t *testing.T) {
	p := &api.Pod{Spec: api.PodSpec{DNSPolicy: api.DNSDefault, DNSConfig: &api.PodDNSConfig{Searches: []string{"x.example"}}}}
	broken := errors.New("no resolv.conf")
	if _, _, err := podResolver(p, DNSConfig{}, true, func() (resolver, error) { return resolver{}, broken }); !errors.Is(err, broken) {
		t.Errorf("got %v, want the node's file's error", err)
	}
}
