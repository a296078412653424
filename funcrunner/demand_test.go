package funcrunner

import (
	"testing"

	"minik8s/pkg/function"
)

func TestDemand(t *testing.T) {
	d := newDemand()
	type op struct {
		do string // start, done, wait, unwait, snap
		fn string
	}
	for _, tc := range []struct {
		name   string
		ops    []op
		want   map[string]function.FuncDemand // LastCall is checked apart
		urgent bool
	}{
		{"steps count", []op{{"start", "a"}, {"start", "a"}, {"start", "b"}, {"done", "a"}},
			map[string]function.FuncDemand{"a": {Started: 2, InFlight: 1, Peak: 2}, "b": {Started: 1, InFlight: 1, Peak: 1}}, false},
		{"peak resets to in flight at each snapshot", []op{{"start", "a"}, {"start", "a"}, {"start", "a"}, {"done", "a"}, {"done", "a"}, {"snap", ""}},
			map[string]function.FuncDemand{"a": {Started: 3, InFlight: 1, Peak: 1}}, false},
		{"peak of a burst between reports", []op{{"start", "a"}, {"done", "a"}, {"snap", ""}, {"start", "a"}, {"start", "a"}, {"done", "a"}, {"done", "a"}},
			map[string]function.FuncDemand{"a": {Started: 3, InFlight: 0, Peak: 2}}, false},
		{"waiting counts and is urgent", []op{{"start", "a"}, {"wait", "a"}, {"start", "a"}, {"wait", "a"}},
			map[string]function.FuncDemand{"a": {Started: 2, InFlight: 2, Peak: 2, Waiting: 2}}, true},
		{"waits end", []op{{"start", "a"}, {"wait", "a"}, {"unwait", "a"}, {"done", "a"}},
			map[string]function.FuncDemand{"a": {Started: 1, InFlight: 0, Peak: 1}}, true},
		{"nothing below zero", []op{{"done", "a"}, {"unwait", "a"}, {"start", "b"}},
			map[string]function.FuncDemand{"b": {Started: 1, InFlight: 1, Peak: 1}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d = newDemand()
			for _, o := range tc.ops {
				switch o.do {
				case "start":
					d.start(o.fn)
				case "done":
					d.done(o.fn)
				case "wait":
					d.wait(o.fn)
				case "unwait":
					d.unwait(o.fn)
				case "snap":
					d.snapshot()
				}
			}
			got := d.snapshot().Functions
			for fn, w := range tc.want {
				g := got[fn]
				if g.LastCall == nil {
					t.Errorf("%s: no lastCall", fn)
				}
				g.LastCall = nil
				if g != w {
					t.Errorf("%s: %+v, want %+v", fn, g, w)
				}
			}
			for fn, g := range got {
				if _, ok := tc.want[fn]; !ok && (g.Started != 0 || g.InFlight != 0 || g.Waiting != 0) {
					t.Errorf("unexpected %s: %+v", fn, g)
				}
			}
			select {
			case <-d.urgent():
				if !tc.urgent {
					t.Error("urgent without a waiting step")
				}
			default:
				if tc.urgent {
					t.Error("not urgent with a waiting step")
				}
			}
		})
	}
}

// Only a function's first waiting step is urgent; the signal never blocks.
func TestDemandUrgentOnFirstWait(t *testing.T) {
	d := newDemand()
	d.wait("a")
	d.wait("a") // already waiting: not news
	d.wait("b") // news, but the buffer holds one signal: must not block
	<-d.urgent()
	select {
	case <-d.urgent():
		t.Fatal("more than one signal buffered")
	default:
	}
	d.wait("a")
	select {
	case <-d.urgent():
		t.Fatal("a third waiting step of a is urgent")
	default:
	}
	d.unwait("a")
	d.unwait("a")
	d.unwait("a")
	d.wait("a")
	select {
	case <-d.urgent():
	default:
		t.Fatal("a waiting again after none waited is not urgent")
	}
}
