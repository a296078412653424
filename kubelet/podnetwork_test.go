package kubelet

import (
	"maps"
	"testing"

	"minik8s/pkg/api"
)

func TestRoutesTo(t *testing.T) {
	node := func(name, cidr, ip string) *api.Node {
		n := &api.Node{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.NodeSpec{PodCIDR: cidr}}
		if ip != "" {
			n.Status.Addresses = []api.NodeAddress{{Type: "Hostname", Address: name}, {Type: api.NodeInternalIP, Address: ip}}
		}
		return n
	}
	nodes := []*api.Node{
		node("self", "127.42.0.0/24", "127.99.0.1"),
		node("b", "127.42.1.0/24", "127.99.0.2"),
		node("c", "127.42.2.0/24", "127.99.0.3"),
		node("no-cidr", "", "127.99.0.4"),
		node("no-address", "127.42.5.0/24", ""),
	}
	want := map[string]string{"127.42.1.0/24": "127.99.0.2", "127.42.2.0/24": "127.99.0.3"}
	if got := routesTo("self", nodes); !maps.Equal(got, want) {
		t.Errorf("routesTo = %v, want %v", got, want)
	}
}
