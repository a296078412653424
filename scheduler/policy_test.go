package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

func TestLeastAllocated(t *testing.T) {
	tests := []struct {
		name  string
		pod   *podInfo
		nodes []*nodeInfo
		want  string
	}{
		{"emptier node", newPodInfo(testPod("p", "100m", "10Mi")), []*nodeInfo{
			info(testNode("a", "1", "1Gi"), testPod("x", "500m", "500Mi")),
			info(testNode("b", "1", "1Gi"), testPod("y", "100m", "100Mi")),
		}, "b"},
		{"bigger node", newPodInfo(testPod("p", "100m", "10Mi")), []*nodeInfo{
			info(testNode("a", "1", "1Gi")),
			info(testNode("b", "4", "4Gi")),
		}, "b"},
		{"pods asking nothing spread", newPodInfo(testPod("p", "", "")), []*nodeInfo{
			info(testNode("a", "2", "2Gi"), testPod("x", "", "")),
			info(testNode("b", "2", "2Gi")),
		}, "b"},
		{"tie goes to fewer pods", newPodInfo(testPod("p", "100m", "")), []*nodeInfo{
			info(testNode("a", "1", "1Gi"), testPod("x", "0", "")),
			info(testNode("b", "1", "1Gi")),
		}, "b"},
		{"full tie goes by name", newPodInfo(testPod("p", "100m", "")), []*nodeInfo{
			info(testNode("b", "1", "1Gi")),
			info(testNode("a", "1", "1Gi")),
		}, "a"},
		{"a PreferNoSchedule taint outweighs free room", newPodInfo(testPod("p", "100m", "10Mi")), []*nodeInfo{
			info(testNode("a", "4", "4Gi", tainted("dedicated", "batch", corev1.TaintEffectPreferNoSchedule))),
			info(testNode("b", "1", "1Gi"), testPod("x", "500m", "500Mi")),
		}, "b"},
		{"a tolerated PreferNoSchedule taint counts for nothing", newPodInfo(tolerating(testPod("p", "100m", "10Mi"))), []*nodeInfo{
			info(testNode("a", "4", "4Gi", tainted("dedicated", "batch", corev1.TaintEffectPreferNoSchedule))),
			info(testNode("b", "1", "1Gi"), testPod("x", "500m", "500Mi")),
		}, "a"},
		{"preferred node affinity", newPodInfo(preferring(testPod("p", "100m", "10Mi"), 10, "disk", "ssd")), []*nodeInfo{
			info(testNode("a", "4", "4Gi")),
			info(labelled(testNode("b", "1", "1Gi"), "disk", "ssd"), testPod("x", "500m", "500Mi")),
		}, "b"},
		{"the heavier preference wins", newPodInfo(preferring(preferring(testPod("p", "100m", "10Mi"), 10, "disk", "ssd"), 50, "zone", "z1")), []*nodeInfo{
			info(labelled(testNode("a", "1", "1Gi"), "disk", "ssd")),
			info(labelled(testNode("b", "1", "1Gi"), "zone", "z1")),
		}, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := NewPolicy(PolicyLeastAllocated)
			if got := p.Pick(tt.pod, tt.nodes); got.node.Name != tt.want {
				t.Fatalf("picked %s, want %s", got.node.Name, tt.want)
			}
		})
	}
}

func TestRoundRobin(t *testing.T) {
	p, _ := NewPolicy(PolicyRoundRobin)
	a, b, c := info(testNode("a", "1", "1Gi")), info(testNode("b", "1", "1Gi")), info(testNode("c", "1", "1Gi"))
	pi := newPodInfo(testPod("p", "", ""))
	steps := []struct {
		fit  []*nodeInfo
		want string
	}{
		{[]*nodeInfo{c, a, b}, "a"},
		{[]*nodeInfo{c, a, b}, "b"},
		{[]*nodeInfo{c, a, b}, "c"},
		{[]*nodeInfo{c, a, b}, "a"},
		{[]*nodeInfo{a, c}, "c"}, // b does not fit: skipped
		{[]*nodeInfo{a, b}, "a"}, // wraps around
	}
	for i, s := range steps {
		if got := p.Pick(pi, s.fit); got.node.Name != s.want {
			t.Fatalf("step %d: picked %s, want %s", i, got.node.Name, s.want)
		}
	}
	if p.Pick(pi, nil) != nil {
		t.Fatal("picked a node out of none")
	}
	if _, err := NewPolicy("best-fit"); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

func labelled(n *api.Node, k, v string) *api.Node {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[k] = v
	return n
}

func tolerating(p *api.Pod) *api.Pod {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch"})
	return p
}

func preferring(p *api.Pod, weight int32, k, v string) *api.Pod {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	}
	na := p.Spec.Affinity.NodeAffinity
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, corev1.PreferredSchedulingTerm{
		Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}})
	return p
}
