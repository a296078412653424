package nodecondition

import (
	"testing"

	"minik8s/pkg/api"
)

func TestReadyStatus(t *testing.T) {
	for _, tc := range []struct {
		name       string
		conditions []api.NodeCondition
		want       string
	}{
		{"no conditions", nil, ""},
		{"others only", []api.NodeCondition{{Type: "MemoryPressure", Status: api.ConditionTrue}}, ""},
		{"ready", []api.NodeCondition{{Type: "MemoryPressure", Status: api.ConditionFalse}, {Type: api.NodeReady, Status: api.ConditionTrue}}, api.ConditionTrue},
		{"lost", []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionUnknown}}, api.ConditionUnknown},
	} {
		n := &api.Node{Status: api.NodeStatus{Conditions: tc.conditions}}
		if got := ReadyStatus(n); got != tc.want {
			t.Errorf("%s: ReadyStatus %q, want %q", tc.name, got, tc.want)
		}
		if c := Ready(n); c != nil && c != &n.Status.Conditions[len(tc.conditions)-1] {
			t.Errorf("%s: Ready is not the node's own condition", tc.name)
		}
	}
}
