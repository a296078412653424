package admission

import (
	"reflect"
	"testing"
)

func TestForbiddenNodeLabels(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old, next map[string]string
		want      []string
	}{
		{"nothing changes", map[string]string{"node-restriction.kubernetes.io/pool": "a"}, map[string]string{"node-restriction.kubernetes.io/pool": "a"}, nil},
		{"own labels", nil, map[string]string{"minik8s.io/pod-network": "cni", "team": "x"}, nil},
		{"kubelet's labels", nil, map[string]string{"kubernetes.io/hostname": "h", "kubernetes.io/os": "linux", "node.kubernetes.io/exclude-from-external-load-balancers": "",
			"kubelet.kubernetes.io/x": "y", "topology.kubernetes.io/zone": "z"}, nil},
		{"node-restriction added", nil, map[string]string{"node-restriction.kubernetes.io/pool": "secure"}, []string{"node-restriction.kubernetes.io/pool"}},
		{"node-restriction subdomain", nil, map[string]string{"a.node-restriction.kubernetes.io/x": ""}, []string{"a.node-restriction.kubernetes.io/x"}},
		{"node-restriction removed", map[string]string{"node-restriction.kubernetes.io/pool": "secure"}, nil, []string{"node-restriction.kubernetes.io/pool"}},
		{"node-restriction changed", map[string]string{"node-restriction.kubernetes.io/pool": "a"}, map[string]string{"node-restriction.kubernetes.io/pool": "b"}, []string{"node-restriction.kubernetes.io/pool"}},
		{"emptied", map[string]string{"node-restriction.kubernetes.io/pool": "a"}, map[string]string{"node-restriction.kubernetes.io/pool": ""}, []string{"node-restriction.kubernetes.io/pool"}},
		{"unknown kubernetes.io", nil, map[string]string{"kubernetes.io/role": "master", "x.k8s.io/y": "z"}, []string{"kubernetes.io/role", "x.k8s.io/y"}},
		{"not a domain suffix", nil, map[string]string{"evilkubernetes.io/x": "y"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ForbiddenNodeLabels(tc.old, tc.next); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ForbiddenNodeLabels(%v, %v) = %v, want %v", tc.old, tc.next, got, tc.want)
			}
		})
	}
}
