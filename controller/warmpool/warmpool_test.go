package warmpool

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

func TestEligible(t *testing.T) {
	ready := func(mut ...func(*api.Node)) *api.Node {
		n := &api.Node{ObjectMeta: api.ObjectMeta{Name: "n"},
			Status: api.NodeStatus{Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}}}}
		for _, m := range mut {
			m(n)
		}
		return n
	}
	now := time.Now()
	cases := []struct {
		name string
		node *api.Node
		want bool
	}{
		{"ready", ready(), true},
		{"not ready", ready(func(n *api.Node) { n.Status.Conditions[0].Status = api.ConditionFalse }), false},
		{"no condition", ready(func(n *api.Node) { n.Status.Conditions = nil }), false},
		{"cordoned", ready(func(n *api.Node) { n.Spec.Unschedulable = true }), false},
		{"being deleted", ready(func(n *api.Node) { n.DeletionTimestamp = &now }), false},
		{"NoSchedule taint", ready(func(n *api.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "NoSchedule"}} }), false},
		{"NoExecute taint", ready(func(n *api.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "NoExecute"}} }), false},
		{"PreferNoSchedule taint", ready(func(n *api.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "PreferNoSchedule"}} }), true},
	}
	for _, tc := range cases {
		if got := eligible(tc.node); got != tc.want {
			t.Errorf("%s: eligible = %v, want %v", tc.name, got, tc.want)
		}
	}
}
