package function

import (
	"testing"

	"minik8s/pkg/api"
)

// The logs of a call name each step when there are several, and say
// which post plugins failed after it.
func TestCallLogs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []api.FuncStepRecord
		want  string
	}{
		{"one step", []api.FuncStepRecord{{Function: "a", Output: "hi"}}, "hi\n"},
		{"two steps", []api.FuncStepRecord{{Function: "a", Output: "hi\n"}, {Function: "b"}}, "--- step 1: a ---\nhi\n--- step 2: b ---\n"},
		{"a post plugin failed", []api.FuncStepRecord{{Function: "a", Output: "hi\n", PluginErrors: []string{"gate: RuntimeError: no"}}},
			"hi\n[post plugin failed: gate: RuntimeError: no]\n"},
	} {
		if got := CallLogs(tc.steps); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
