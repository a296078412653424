package funcrunner

import (
	"encoding/json"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// A step's context names its trigger, its app's config and, for a
// schedule's call, the schedule (seed 002's context["schedule"]).
func TestStepCallContext(t *testing.T) {
	f := &api.Func{ObjectMeta: api.ObjectMeta{Name: "tick", Namespace: "ns"}}
	for _, tc := range []struct {
		name    string
		trigger *api.FuncTriggerRef
		want    function.CallContext
	}{
		{"a call of the API", nil, function.CallContext{Config: map[string]string{}}},
		{"a schedule's call", &api.FuncTriggerRef{Name: "nightly", Type: "schedule", Schedule: "0 3 * * *", Config: map[string]string{"k": "v"}},
			function.CallContext{Trigger: "schedule/nightly", Schedule: "0 3 * * *", Config: map[string]string{"k": "v"}}},
	} {
		inst := &api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "i-1"}, Spec: api.FuncInstanceSpec{Function: "tick", Trigger: tc.trigger}}
		sc := newStepCall(inst, f, "x", "")
		var got function.CallContext
		if err := json.Unmarshal([]byte(sc.header.Get(function.HeaderContext)), &got); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Trigger != tc.want.Trigger || got.Schedule != tc.want.Schedule || got.Config["k"] != tc.want.Config["k"] || got.InstanceID != "i-1" {
			t.Errorf("%s: context %+v, want trigger %q schedule %q config %v", tc.name, got, tc.want.Trigger, tc.want.Schedule, tc.want.Config)
		}
	}
}
