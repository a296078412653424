package podstatus

import (
	"testing"

	"minik8s/pkg/api"
)

func TestIsReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		conds []api.PodCondition
		want  bool
	}{
		{"no conditions", nil, false},
		{"ready", []api.PodCondition{{Type: api.PodScheduled, Status: api.ConditionTrue}, {Type: api.PodReady, Status: api.ConditionTrue}}, true},
		{"not ready", []api.PodCondition{{Type: api.PodReady, Status: api.ConditionFalse}}, false},
		{"scheduled only", []api.PodCondition{{Type: api.PodScheduled, Status: api.ConditionTrue}}, false},
	} {
		if got := IsReady(&api.Pod{Status: api.PodStatus{Conditions: tc.conds}}); got != tc.want {
			t.Errorf("%s: IsReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}
