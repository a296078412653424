package functions

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

func TestNextCounter(t *testing.T) {
	spec := func(lo, hi int, cc *int) *api.FuncSpec {
		return &api.FuncSpec{MinInstanceNum: ptr(lo), MaxInstanceNum: ptr(hi), ContainerConcurrency: cc}
	}
	tests := []struct {
		name       string
		spec       *api.FuncSpec
		counter    int
		demand     funcDemand
		want       int
		wantCalled bool
	}{
		{"no demand keeps the counter", spec(0, 10, nil), 2, funcDemand{}, 2, false},
		{"a call at zero asks for a pod", spec(0, 10, nil), 0, funcDemand{Started: 1}, 1, true},
		{"each call raises the counter (cc 1, the seed's rule)", spec(0, 10, ptr(1)), 1, funcDemand{Started: 3}, 4, true},
		{"N calls of one report raise it by ceil(N/cc)", spec(0, 10, ptr(4)), 1, funcDemand{Started: 9}, 4, true},
		{"one call raises it by one whatever cc", spec(0, 10, nil), 2, funcDemand{Started: 1}, 3, true},
		{"calls raise it up to max", spec(0, 3, nil), 2, funcDemand{Started: 100}, 3, true},
		{"a huge count does not overflow", spec(0, 5, nil), 1, funcDemand{Started: 1 << 62}, 5, true},
		{"a waiting call asks for a pod", spec(0, 10, nil), 0, funcDemand{Waiting: 1, Concurrent: 1}, 1, false},
		{"waiting counts without concurrency", spec(0, 10, nil), 0, funcDemand{Waiting: 2}, 1, false},
		{"calls at once need ceil(N/cc) pods", spec(0, 10, ptr(4)), 0, funcDemand{Concurrent: 9}, 3, false},
		{"cc defaults to the runtime's workers", spec(0, 10, nil), 1, funcDemand{Concurrent: 5}, 2, false},
		{"cc 1: a pod per call", spec(0, 10, ptr(1)), 0, funcDemand{Concurrent: 5}, 5, false},
		{"need clamped to max", spec(0, 10, ptr(4)), 0, funcDemand{Concurrent: 100, Waiting: 90}, 10, false},
		{"need never lowers the counter", spec(0, 10, ptr(4)), 5, funcDemand{Concurrent: 1}, 5, false},
		{"calls and need: the larger", spec(0, 20, ptr(2)), 1, funcDemand{Started: 2, Concurrent: 10}, 5, true},
		{"min holds", spec(2, 10, nil), 0, funcDemand{}, 2, false},
		{"a lowered max lowers the counter", spec(0, 3, nil), 8, funcDemand{}, 3, false},
		{"max 0 stays 0", spec(0, 0, nil), 0, funcDemand{Started: 4, Waiting: 1}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, called := nextCounter(tc.counter, tc.spec, tc.demand)
			if got != tc.want || called != tc.wantCalled {
				t.Errorf("nextCounter(%d, %+v) = %d, %v; want %d, %v", tc.counter, tc.demand, got, called, tc.want, tc.wantCalled)
			}
		})
	}
}

// runnerLease is a runner's Lease, acquired at acquire, renewed at renew,
// reporting fns.
func runnerLease(t *testing.T, name string, acquire, renew time.Time, fns map[string]function.FuncDemand) *api.Lease {
	t.Helper()
	data, err := json.Marshal(function.Demand{Functions: fns})
	if err != nil {
		t.Fatal(err)
	}
	id := name
	dur := int32(5)
	return &api.Lease{
		ObjectMeta: api.ObjectMeta{Name: function.RunnerLeaseName(name), Namespace: function.RunnerNamespace,
			Labels:      map[string]string{function.LabelComponent: function.ComponentRunner},
			Annotations: map[string]string{function.AnnotationDemand: string(data)}},
		Spec: api.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &dur, AcquireTime: api.NewMicroTime(acquire), RenewTime: api.NewMicroTime(renew)},
	}
}

func TestDemandTracker(t *testing.T) {
	start := time.Unix(10000, 0)
	now := start.Add(time.Minute)
	before, after := start.Add(-time.Hour), start.Add(time.Second)
	const fn = "default/fn"
	one := func(started int64, inFlight, peak, waiting int) map[string]function.FuncDemand {
		return map[string]function.FuncDemand{fn: {Started: started, InFlight: inFlight, Peak: peak, Waiting: waiting}}
	}
	type step func(t *testing.T, tr *demandTracker)
	observe := func(name string, acquire, renew time.Time, fns map[string]function.FuncDemand) step {
		return func(t *testing.T, tr *demandTracker) { tr.observe(runnerLease(t, name, acquire, renew, fns), now) }
	}
	forget := func(name string) step {
		return func(t *testing.T, tr *demandTracker) {
			tr.forget(runnerLease(t, name, time.Time{}, time.Time{}, nil))
		}
	}
	// commitNow takes in what a snapshot at now sees, as a written sync does.
	commitNow := func(t *testing.T, tr *demandTracker) { tr.commit(fn, tr.snapshot(fn, now)) }
	tests := []struct {
		name  string
		steps []step
		want  funcDemand // marks ignored
	}{
		{"a runner started after the controller counts in full",
			[]step{observe("a", after, now, one(5, 2, 3, 1))}, funcDemand{Started: 5, Concurrent: 3, Waiting: 1}},
		{"a runner started before is a baseline",
			[]step{observe("a", before, now, one(5, 2, 0, 0))}, funcDemand{Concurrent: 2}},
		{"a baseline runner's later calls count",
			[]step{observe("a", before, now, one(5, 0, 0, 0)), observe("a", before, now, one(7, 0, 0, 0))},
			funcDemand{Started: 2}},
		{"a function new in a baseline runner's report counts in full",
			[]step{observe("a", before, now, nil), observe("a", before, now, one(4, 0, 0, 0))}, funcDemand{Started: 4}},
		{"calls are taken in once",
			[]step{observe("a", after, now, one(5, 0, 0, 0)), commitNow}, funcDemand{}},
		{"calls after a commit count",
			[]step{observe("a", after, now, one(5, 0, 0, 0)), commitNow, observe("a", after, now, one(8, 0, 0, 0))},
			funcDemand{Started: 3}},
		{"an expired lease's demand does not count",
			[]step{observe("a", after, now.Add(-time.Minute), one(5, 4, 4, 2))}, funcDemand{}},
		{"a renewed lease's demand counts again",
			[]step{observe("a", after, now.Add(-time.Minute), one(5, 4, 4, 2)), observe("a", after, now, one(5, 4, 4, 2))},
			funcDemand{Started: 5, Concurrent: 4, Waiting: 2}},
		{"a deleted lease's demand is forgotten",
			[]step{observe("a", after, now, one(5, 4, 4, 2)), forget("a")}, funcDemand{}},
		{"a runner started again counts anew",
			[]step{observe("a", before, now, one(100, 0, 0, 0)), observe("a", after, now, one(2, 0, 0, 0))},
			funcDemand{Started: 2}},
		{"a count that went back counts anew",
			[]step{observe("a", after, now, one(10, 0, 0, 0)), commitNow, observe("a", after, now, one(3, 0, 0, 0))},
			funcDemand{Started: 3}},
		{"runners add up",
			[]step{observe("a", after, now, one(1, 3, 1, 1)), observe("b", before, now, one(9, 0, 2, 1)),
				observe("c", after, now.Add(-time.Hour), one(50, 50, 50, 50))},
			funcDemand{Started: 1, Concurrent: 5, Waiting: 2}},
		{"another function's demand is not this one's",
			[]step{observe("a", after, now, map[string]function.FuncDemand{"default/other": {Started: 3, InFlight: 3, Waiting: 3}})},
			funcDemand{}},
		{"a lease that is not a runner's is ignored",
			[]step{func(t *testing.T, tr *demandTracker) {
				l := runnerLease(t, "a", after, now, one(5, 5, 5, 5))
				l.Labels = nil
				tr.observe(l, now)
				l = runnerLease(t, "b", after, now, one(5, 5, 5, 5))
				l.Namespace = "default"
				tr.observe(l, now)
			}}, funcDemand{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newDemandTracker(start)
			for _, s := range tc.steps {
				s(t, tr)
			}
			got := tr.snapshot(fn, now)
			if got.Started != tc.want.Started || got.Concurrent != tc.want.Concurrent || got.Waiting != tc.want.Waiting {
				t.Errorf("snapshot = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A snapshot taken before a runner started again must not mark the new
// runner's calls as taken in.
func TestDemandCommitAfterRestart(t *testing.T) {
	start := time.Unix(10000, 0)
	now := start.Add(time.Minute)
	const fn = "default/fn"
	tr := newDemandTracker(start)
	tr.observe(runnerLease(t, "a", start.Add(time.Second), now, map[string]function.FuncDemand{fn: {Started: 5}}), now)
	old := tr.snapshot(fn, now)
	tr.observe(runnerLease(t, "a", start.Add(2*time.Second), now, map[string]function.FuncDemand{fn: {Started: 7}}), now)
	tr.commit(fn, old)
	if got := tr.snapshot(fn, now); got.Started != 7 {
		t.Fatalf("after a stale commit: %d calls to take in, want 7", got.Started)
	}
}

func TestDemandObserveSaysWhatChanged(t *testing.T) {
	start := time.Unix(10000, 0)
	now := start.Add(time.Minute)
	acq := start.Add(time.Second)
	fns := func(m map[string]function.FuncDemand) map[string]function.FuncDemand { return m }
	tests := []struct {
		name       string
		prev, next *api.Lease
		want       []string
	}{
		{"first sight: every function", nil,
			runnerLease(t, "a", acq, now, fns(map[string]function.FuncDemand{"d/x": {}, "d/y": {Started: 1}})), []string{"d/x", "d/y"}},
		{"a renewal alone changes nothing",
			runnerLease(t, "a", acq, now.Add(-time.Second), fns(map[string]function.FuncDemand{"d/x": {Started: 1}})),
			runnerLease(t, "a", acq, now, fns(map[string]function.FuncDemand{"d/x": {Started: 1}})), nil},
		{"changed numbers",
			runnerLease(t, "a", acq, now, fns(map[string]function.FuncDemand{"d/x": {Started: 1}, "d/y": {Waiting: 0}, "d/z": {Peak: 2}})),
			runnerLease(t, "a", acq, now, fns(map[string]function.FuncDemand{"d/x": {Started: 1}, "d/y": {Waiting: 1}, "d/z": {Peak: 3}})),
			[]string{"d/y", "d/z"}},
		{"a function gone from the report",
			runnerLease(t, "a", acq, now, fns(map[string]function.FuncDemand{"d/x": {InFlight: 1}})),
			runnerLease(t, "a", acq, now, nil), []string{"d/x"}},
		{"a revived lease: every function",
			runnerLease(t, "a", acq, now.Add(-time.Hour), fns(map[string]function.FuncDemand{"d/x": {Started: 1}})),
			runnerLease(t, "a", acq, now, fns(map[string]function.FuncDemand{"d/x": {Started: 1}})), []string{"d/x"}},
		{"a runner started again: old and new functions",
			runnerLease(t, "a", acq, now, fns(map[string]function.FuncDemand{"d/x": {Started: 1}})),
			runnerLease(t, "a", acq.Add(time.Second), now, fns(map[string]function.FuncDemand{"d/y": {Started: 1}})),
			[]string{"d/x", "d/y"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newDemandTracker(start)
			if tc.prev != nil {
				tr.observe(tc.prev, now)
			}
			got := tr.observe(tc.next, now)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("observe = %v, want %v", got, tc.want)
			}
		})
	}
	tr := newDemandTracker(start)
	l := runnerLease(t, "a", acq, now, fns(map[string]function.FuncDemand{"d/x": {}}))
	tr.observe(l, now)
	if got := tr.forget(l); !slices.Equal(got, []string{"d/x"}) {
		t.Errorf("forget = %v, want [d/x]", got)
	}
	if got := tr.forget(l); got != nil {
		t.Errorf("forget of a forgotten lease = %v, want none", got)
	}
}
