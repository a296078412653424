package scheduler

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s/pkg/api"
)

func TestTopologySpread(t *testing.T) {
	zoned := func(name, zone string, cpu ...string) *api.Node {
		n := testNode(name, append(cpu, "4")[0], "4Gi")
		if zone != "" {
			n.Labels = map[string]string{"zone": zone}
		}
		return n
	}
	web := func(name string) *api.Pod {
		p := testPod(name, "100m", "")
		p.Namespace, p.UID, p.Labels = "default", "uid-"+name, map[string]string{"app": "web"}
		return p
	}
	spreadPod := func(when corev1.UnsatisfiableConstraintAction, minDomains *int32) *api.Pod {
		p := web("new")
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: when,
			MinDomains: minDomains, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		return p
	}
	three := int32(3)
	cases := []struct {
		name  string
		pod   *api.Pod
		nodes []*api.Node
		// placed pods by node name
		placed  map[string]int
		fit     []string
		reasons []string
		pick    string
	}{
		{"the emptier zone only", spreadPod(corev1.DoNotSchedule, nil),
			[]*api.Node{zoned("a", "z1"), zoned("b", "z1"), zoned("c", "z2")}, map[string]int{"a": 1, "b": 1},
			[]string{"c"}, []string{reasonSpread}, "c"},
		{"balanced zones take either", spreadPod(corev1.DoNotSchedule, nil),
			[]*api.Node{zoned("a", "z1"), zoned("c", "z2")}, map[string]int{"a": 1, "c": 1},
			[]string{"a", "c"}, nil, "a"},
		{"a node without the key is out", spreadPod(corev1.DoNotSchedule, nil),
			[]*api.Node{zoned("a", "z1"), zoned("x", "")}, nil,
			[]string{"a"}, []string{reasonSpreadMissingLabel}, "a"},
		{"fewer domains than minDomains", spreadPod(corev1.DoNotSchedule, &three),
			[]*api.Node{zoned("a", "z1"), zoned("c", "z2")}, map[string]int{"a": 1, "c": 1},
			nil, []string{reasonSpread}, ""},
		// b has more room, c's zone fewer of the pods.
		{"ScheduleAnyway prefers the emptier zone", spreadPod(corev1.ScheduleAnyway, nil),
			[]*api.Node{zoned("a", "z1"), zoned("b", "z1"), zoned("c", "z2", "1")}, map[string]int{"a": 1},
			[]string{"a", "b", "c"}, nil, "c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cache := newPodCache()

			i := 0
			for _, n := range c.nodes {
				for range c.placed[n.Name] {
					p := web(fmt.Sprintf("p%d", i))
					i++
					p.Spec.NodeName = n.Name
					cache.setPod(p)
				}
			}
			infos := nodeInfos(cache, c.nodes)
			pi := newPodInfo(c.pod)
			pi.spread = newSpread(pi, infos, cache.pods)
			fit, reasons := feasible(pi, infos)
			names := nodeNames(fit)
			if fmt.Sprint(names) != fmt.Sprint(c.fit) {
				t.Errorf("fit %v, want %v (reasons %v)", names, c.fit, reasons)
			}
			for _, r := range c.reasons {
				if reasons[r] == 0 {
					t.Errorf("reasons %v lack %q", reasons, r)
				}
			}
			if len(fit) > 0 {
				p, _ := NewPolicy(PolicyLeastAllocated)
				if got := p.Pick(pi, fit).node.Name; got != c.pick {
					t.Errorf("picked %s, want %s", got, c.pick)
				}
			}
		})
	}
}

// nodeInfos are nodes as schedule sees them, with what cache placed.
func nodeInfos(cache *podCache, nodes []*api.Node) []*nodeInfo {
	var infos []*nodeInfo
	for _, n := range nodes {
		a, maxPods := allocatable(n)
		infos = append(infos, &nodeInfo{node: n, alloc: a, maxPods: maxPods, used: cache.usageLocked(n.Name)})
	}
	return infos
}

func nodeNames(infos []*nodeInfo) []string {
	var names []string
	for _, ni := range infos {
		names = append(names, ni.node.Name)
	}
	return names
}
