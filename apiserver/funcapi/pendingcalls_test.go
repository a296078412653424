package funcapi

import (
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

func pendingInstance(name, arg string, phase string) *api.FuncInstance {
	inst := &api.FuncInstance{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name},
		Spec: api.FuncInstanceSpec{Arg: api.Bytes(arg)}, Status: api.FuncInstanceStatus{Phase: phase}}
	if phase == api.InstanceRunning {
		inst.Status.Next = &api.FuncStep{Arg: api.Bytes(arg)}
	}
	return inst
}

// TestPendingBytes walks the accounting of pending calls' arguments:
// reservations, creates noted before or after the watch sees them, ends
// and deletions.
func TestPendingBytes(t *testing.T) {
	type step struct {
		do      string // reserve, created, failed, watch, ended, deleted
		name    string
		n       int64 // argument length
		refused bool
	}
	for _, tc := range []struct {
		name  string
		max   int64
		steps []step
		want  int64 // total + reserved at the end
	}{
		{name: "within the bound", max: 100, steps: []step{{do: "reserve", n: 20}, {do: "created", name: "a", n: 20}}, want: 40},
		{name: "past the bound", max: 100, steps: []step{
			{do: "reserve", n: 20}, {do: "created", name: "a", n: 20},
			{do: "reserve", n: 20}, {do: "created", name: "b", n: 20},
			{do: "reserve", n: 20, refused: true}}, want: 80},
		{name: "a failed create gives back", max: 100, steps: []step{
			{do: "reserve", n: 40}, {do: "failed", n: 40}, {do: "reserve", n: 40}, {do: "created", name: "a", n: 40}}, want: 80},
		{name: "the watch first, the create's note after", max: 100, steps: []step{
			{do: "reserve", n: 20}, {do: "watch", name: "a", n: 20}, {do: "created", name: "a", n: 20}}, want: 40},
		{name: "ended before the create's note", max: 100, steps: []step{
			{do: "reserve", n: 20}, {do: "watch", name: "a", n: 20}, {do: "ended", name: "a"}, {do: "created", name: "a", n: 20}}, want: 0},
		{name: "an end frees room", max: 100, steps: []step{
			{do: "reserve", n: 25}, {do: "created", name: "a", n: 25},
			{do: "reserve", n: 25}, {do: "created", name: "b", n: 25},
			{do: "ended", name: "a"}, {do: "reserve", n: 25}, {do: "created", name: "c", n: 25}}, want: 100},
		{name: "a deletion frees room", max: 100, steps: []step{
			{do: "reserve", n: 50}, {do: "created", name: "a", n: 50},
			{do: "deleted", name: "a"}, {do: "reserve", n: 50}, {do: "created", name: "b", n: 50}}, want: 100},
		{name: "no bound", max: -1, steps: []step{{do: "reserve", n: 1 << 30}, {do: "created", name: "a", n: 1 << 30}}, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPendingBytes(nil, tc.max)
			var done func(api.Object)
			for i, s := range tc.steps {
				switch s.do {
				case "reserve":
					var err error
					done, err = p.reserve(2 * s.n)
					if s.refused != (err != nil) || (err != nil && !errdefs.IsTooManyRequests(err)) {
						t.Fatalf("step %d: reserve %d: %v, want refused %v (429)", i, 2*s.n, err, s.refused)
					}
				case "created":
					done(pendingInstance(s.name, string(make([]byte, s.n)), api.InstanceRunning))
				case "failed":
					done(nil)
				case "watch":
					p.set("default/"+s.name, argBytes(pendingInstance(s.name, string(make([]byte, s.n)), api.InstanceRunning)))
				case "ended":
					p.set("default/"+s.name, argBytes(pendingInstance(s.name, "x", api.InstanceSucceeded)))
				case "deleted":
					p.remove("default/" + s.name)
				}
			}
			if got := p.total + p.reserved; got != tc.want {
				t.Fatalf("held %d, want %d", got, tc.want)
			}
		})
	}
}
