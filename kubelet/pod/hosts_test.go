package pod

import (
	"strings"
	"testing"

	"minik8s/pkg/api"
)

func TestPodHosts(t *testing.T) {
	node := func() ([]byte, error) { return []byte("127.0.0.1 localhost\n192.0.2.1 node-a"), nil }
	aliases := []api.HostAlias{{IP: "192.0.2.10", Hostnames: []string{"foo.local", "bar.local"}}}
	managed := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	long := strings.Repeat("a", 62) + "-bcd"
	for _, tc := range []struct {
		name       string
		spec       api.PodSpec
		podName    string
		ownNetwork bool
		want       string // "": the node's file as it is
	}{
		{name: "own network", ownNetwork: true, want: managed + "198.51.100.5\tweb\n"},
		{name: "own network, hostname and subdomain", ownNetwork: true, spec: api.PodSpec{Hostname: "db-0", Subdomain: "db"},
			want: managed + "198.51.100.5\tdb-0.db.shop.svc.cluster.local\tdb-0\n"},
		{name: "own network, aliases", ownNetwork: true, spec: api.PodSpec{HostAliases: aliases},
			want: managed + "198.51.100.5\tweb\n\n# Entries added by HostAliases.\n192.0.2.10\tfoo.local\tbar.local\n"},
		{name: "a long name is cut to a label", podName: long, ownNetwork: true, want: managed + "198.51.100.5\t" + strings.Repeat("a", 62) + "\n"},
		{name: "node network", want: ""},
		{name: "node network, aliases added to the node's", spec: api.PodSpec{HostAliases: aliases},
			want: "127.0.0.1 localhost\n192.0.2.1 node-a\n\n# Entries added by HostAliases.\n192.0.2.10\tfoo.local\tbar.local\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.podName
			if name == "" {
				name = "web"
			}
			p := &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "shop", Name: name}, Spec: tc.spec}
			podIP := ""
			if tc.ownNetwork {
				podIP = "198.51.100.5"
			}
			got, own, err := podHosts(p, podIP, "cluster.local", tc.ownNetwork, node)
			if err != nil {
				t.Fatal(err)
			}
			if own != (tc.want != "") || own != hasOwnHosts(p, podIP, tc.ownNetwork) {
				t.Fatalf("own file %v (hasOwnHosts %v), want %v", own, hasOwnHosts(p, podIP, tc.ownNetwork), tc.want != "")
			}
			if got != tc.want {
				t.Errorf("hosts:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
