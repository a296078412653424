package funcrunner

import (
	"encoding/json"
	"maps"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// A step's context names its trigger, its config (the function's own
// under its trigger's and app's) and, for a schedule's call, the schedule
// (seed 002's context["schedule"]).
func TestStepCallContext(t *testing.T) {
	plain := &api.Func{ObjectMeta: api.ObjectMeta{Name: "tick", Namespace: "ns"}}
	configured := &api.Func{ObjectMeta: api.ObjectMeta{Name: "tick", Namespace: "ns"},
		Spec: api.FuncSpec{Config: map[string]string{"level": "info", "db": "fn-db"}}}
	for _, tc := range []struct {
		name    string
		f       *api.Func
		trigger *api.FuncTriggerRef
		want    function.CallContext
	}{
		{"a call of the API", plain, nil, function.CallContext{Config: map[string]string{}}},
		{"a schedule's call", plain, &api.FuncTriggerRef{Name: "nightly", Type: "schedule", Schedule: "0 3 * * *", Config: map[string]string{"k": "v"}},
			function.CallContext{Trigger: "schedule/nightly", Schedule: "0 3 * * *", Config: map[string]string{"k": "v"}}},
		{"a call of the API: the function's config", configured, nil,
			function.CallContext{Config: map[string]string{"level": "info", "db": "fn-db"}}},
		{"a trigger's config goes over the function's", configured, &api.FuncTriggerRef{Name: "q", Type: "queue", Config: map[string]string{"db": "app-db", "k": "v"}},
			function.CallContext{Trigger: "queue/q", Config: map[string]string{"level": "info", "db": "app-db", "k": "v"}}},
	} {
		inst := &api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "i-1"}, Spec: api.FuncInstanceSpec{Function: "tick", Trigger: tc.trigger}}
		sc := newStepCall(inst, tc.f, "x", "")
		var got function.CallContext
		if err := json.Unmarshal([]byte(sc.header.Get(function.HeaderContext)), &got); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Trigger != tc.want.Trigger || got.Schedule != tc.want.Schedule || !maps.Equal(got.Config, tc.want.Config) || got.InstanceID != "i-1" {
			t.Errorf("%s: context %+v, want trigger %q schedule %q config %v", tc.name, got, tc.want.Trigger, tc.want.Schedule, tc.want.Config)
		}
	}
	if len(configured.Spec.Config) != 2 || configured.Spec.Config["db"] != "fn-db" {
		t.Errorf("the function's config was changed: %v", configured.Spec.Config)
	}
}
