package funcrunner

import (
	"testing"

	"minik8s/pkg/api"
)

// TestStaleCopiesDoNotRestartADrivenInstance: once a driver here has
// ended, the informer's older copies of the instance (claimed by this
// runner, not ended) are not driven again, which would run the step
// twice; a newer copy is decided on, and forgets the mark.
func TestStaleCopiesDoNotRestartADrivenInstance(t *testing.T) {
	in := &instances{driving: map[string]bool{}, driven: map[string]uint64{"ns/a": 10}}
	copyAt := func(rv string) *api.FuncInstance {
		return &api.FuncInstance{ObjectMeta: api.ObjectMeta{ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		rv    string
		stale bool
	}{{"9", true}, {"10", true}, {"11", false}, {"10", false}} {
		if got := in.stale("ns/a", copyAt(tc.rv)); got != tc.stale {
			t.Errorf("copy at %s: stale %v, want %v", tc.rv, got, tc.stale)
		}
	}
	if in.stale("ns/b", copyAt("1")) {
		t.Error("an instance never driven here is stale")
	}
}
