package functions

import (
	"sync"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/function"
)

// demandTracker follows the function runners' demand reports (their
// Leases) and remembers, per runner and function, how many of the calls
// the runner reports as started the counter has already taken in. It is
// what makes the controller the only writer of the counter: calls are
// counted from the runners' cumulative Started, each once.
type demandTracker struct {
	// start is when this controller started: a runner whose Lease was
	// acquired before it is a baseline (its calls were counted by the
	// controller that ran then), one acquired after counts in full.
	start time.Time

	mu      sync.Mutex
	runners map[string]*runnerState // by Lease key
}

// runnerState is one incarnation of a runner (one acquireTime of its Lease).
type runnerState struct {
	acquire time.Time
	lease   *api.Lease
	demand  function.Demand
	// taken[fn] is the runner's Started of fn the counter holds already.
	taken map[string]int64
}

func newDemandTracker(start time.Time) *demandTracker {
	return &demandTracker{start: start, runners: map[string]*runnerState{}}
}

// isRunnerLease says whether a Lease is a function runner's.
func isRunnerLease(l *api.Lease) bool {
	return l.Namespace == function.RunnerNamespace && l.Labels[function.LabelComponent] == function.ComponentRunner
}

// observe records a runner Lease and returns the functions whose demand
// changed (their numbers, or whether the runner is live).
func (t *demandTracker) observe(l *api.Lease, now time.Time) []string {
	if !isRunnerLease(l) {
		return nil
	}
	var acquire time.Time
	if l.Spec.AcquireTime != nil {
		acquire = l.Spec.AcquireTime.Time
	}
	d := function.RunnerDemand(l)
	key := leaseKey(l)
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.runners[key]
	if old == nil || !old.acquire.Equal(acquire) {
		// A runner seen for the first time, or started again: a new count.
		st := &runnerState{acquire: acquire, lease: l, demand: d, taken: map[string]int64{}}
		if !acquire.After(t.start) {
			// Running before this controller: its calls so far are counted.
			for fn, fd := range d.Functions {
				st.taken[fn] = fd.Started
			}
		}
		t.runners[key] = st
		var prev function.Demand
		if old != nil {
			prev = old.demand
		}
		return union(prev.Functions, d.Functions, func(string) bool { return true })
	}
	revived := !function.LeaseLive(old.lease, now) && function.LeaseLive(l, now)
	prev := old.demand
	old.lease, old.demand = l, d
	return union(prev.Functions, d.Functions, func(fn string) bool {
		a, b := prev.Functions[fn], d.Functions[fn]
		return revived || a.Started != b.Started || a.InFlight != b.InFlight || a.Peak != b.Peak || a.Waiting != b.Waiting
	})
}

// forget drops a deleted runner Lease; its functions' demand changed.
func (t *demandTracker) forget(l *api.Lease) []string {
	if !isRunnerLease(l) {
		return nil
	}
	key := leaseKey(l)
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.runners[key]
	if st == nil {
		return nil
	}
	delete(t.runners, key)
	return union(st.demand.Functions, nil, func(string) bool { return true })
}

func union(a, b map[string]function.FuncDemand, changed func(fn string) bool) []string {
	var out []string
	for fn := range a {
		if changed(fn) {
			out = append(out, fn)
		}
	}
	for fn := range b {
		if _, ok := a[fn]; !ok && changed(fn) {
			out = append(out, fn)
		}
	}
	return out
}

// funcDemand is one function's demand over the live runners.
type funcDemand struct {
	// Concurrent is Σ max(Peak, InFlight): the calls at once.
	Concurrent int
	// Waiting counts calls waiting for a pod.
	Waiting int
	// Started counts the calls started that the counter has not taken in.
	Started int64
	marks   []takenMark
}

// takenMark is what to record as taken once the counter holds a snapshot.
type takenMark struct {
	runner  *runnerState
	started int64
}

// snapshot sums a function's ("ns/name") demand over the runners whose
// Lease is live at now: a dead runner's demand does not count (its calls
// are taken over by others, which report them).
func (t *demandTracker) snapshot(fn string, now time.Time) funcDemand {
	t.mu.Lock()
	defer t.mu.Unlock()
	var d funcDemand
	for _, st := range t.runners {
		fd, ok := st.demand.Functions[fn]
		if !ok || !function.LeaseLive(st.lease, now) {
			continue
		}
		d.Concurrent += max(fd.Peak, fd.InFlight)
		d.Waiting += fd.Waiting
		taken := st.taken[fn]
		if fd.Started < taken {
			taken = 0 // a cumulative count went back: the runner counts anew
		}
		if fd.Started > taken {
			d.Started += fd.Started - taken
			d.marks = append(d.marks, takenMark{runner: st, started: fd.Started})
		}
	}
	return d
}

// commit records a snapshot's calls as taken in by the counter. A runner
// started again since the snapshot keeps its new count.
func (t *demandTracker) commit(fn string, d funcDemand) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range d.marks {
		if cur := t.runners[leaseKey(m.runner.lease)]; cur == m.runner {
			m.runner.taken[fn] = m.started
		}
	}
}

func leaseKey(l *api.Lease) string { return l.Namespace + "/" + l.Name }

// floor is the counter the function's current demand needs: enough pods
// for the calls at once, and one for a call waiting.
func (d funcDemand) floor(spec *api.FuncSpec) int {
	cc := max(validation.ContainerConcurrency(spec), 1)
	need := (d.Concurrent + cc - 1) / cc
	if d.Waiting > 0 {
		need = max(need, 1)
	}
	return need
}

// nextCounter applies the counter rule to a function's counter: calls
// started raise it (the seed's rule), by ceil(N / containerConcurrency) for
// the N calls of one report, so a burst asks at once for the pods it needs
// and a steady stream of calls still raises it call by call up to max; a
// waiting call asks for at least one pod, N calls at once for
// ceil(N / containerConcurrency) pods; all within [min, max]. The counter never goes down here: idle
// functions decay one step at a time (decayStep). called says calls
// started, so the function's timeStamp is now.
func nextCounter(counter int, spec *api.FuncSpec, d funcDemand) (next int, called bool) {
	lo, _, hi := validation.FuncBounds(spec)
	if d.Started > 0 {
		called = true
		cc := int64(max(validation.ContainerConcurrency(spec), 1))
		counter = int(min(int64(counter)+(d.Started+cc-1)/cc, int64(max(hi, counter))))
	}
	return clamp(max(counter, d.floor(spec)), lo, hi), called
}
