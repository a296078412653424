package kubelet

import (
	"os"
	"strings"
	"testing"

	"minik8s/pkg/api"
)

// TestConfigDefaults: pods get their own network unless told otherwise;
// a node given an address other than loopback's is named after it; a
// relative containerd socket becomes absolute (gRPC reads it as an
// authority otherwise).
func TestConfigDefaults(t *testing.T) {
	host, _ := os.Hostname()
	host = strings.ToLower(host)
	cases := []struct {
		name                      string
		in                        Config
		network, ip, node, svc, e string
	}{
		{name: "host network on loopback", in: Config{PodNetwork: PodNetworkHost, ContainerdAddress: "/run/c.sock"},
			network: PodNetworkHost, ip: "127.0.0.1", node: host},
		{name: "another loopback address names the node", in: Config{PodNetwork: PodNetworkHost, NodeIP: "127.0.0.12", ContainerdAddress: "/run/c.sock"},
			network: PodNetworkHost, ip: "127.0.0.12", node: host + "-127-0-0-12"},
		{name: "own network by default, with the default ranges", in: Config{NodeIP: "127.0.0.12", ContainerdAddress: "/run/c.sock"},
			network: PodNetworkCNI, ip: "127.0.0.12", node: host + "-127-0-0-12", svc: api.DefaultServiceCIDR},
		{name: "a named node keeps its name", in: Config{NodeIP: "127.0.0.12", NodeName: "n2", ContainerdAddress: "/run/c.sock"},
			network: PodNetworkCNI, ip: "127.0.0.12", node: "n2", svc: api.DefaultServiceCIDR},
		{name: "unknown network", in: Config{PodNetwork: "overlay", ContainerdAddress: "/run/c.sock"}, e: "pod-network"},
		{name: "bad cluster range", in: Config{NodeIP: "127.0.0.12", ClusterCIDR: "10.42/16", ContainerdAddress: "/run/c.sock"}, e: "cluster-cidr"},
		{name: "bad address", in: Config{PodNetwork: PodNetworkHost, NodeIP: "node-1", ContainerdAddress: "/run/c.sock"}, e: "node-ip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.in
			err := c.setDefaults()
			if tc.e != "" {
				if err == nil || !strings.Contains(err.Error(), tc.e) {
					t.Fatalf("error %v, want one naming %s", err, tc.e)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PodNetwork != tc.network || c.NodeIP != tc.ip || c.NodeName != tc.node || c.ServiceCIDR != tc.svc {
				t.Errorf("network %q ip %q node %q services %q, want %q %q %q %q", c.PodNetwork, c.NodeIP, c.NodeName, c.ServiceCIDR, tc.network, tc.ip, tc.node, tc.svc)
			}
		})
	}
	c := Config{PodNetwork: PodNetworkHost, ContainerdAddress: "data/c.sock"}
	if err := c.setDefaults(); err != nil || !strings.HasPrefix(c.ContainerdAddress, "/") {
		t.Errorf("relative containerd socket: %q %v", c.ContainerdAddress, err)
	}
}
