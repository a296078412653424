package funcrunner

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// gatedPod holds every call until the test lets it go (release) or opens
// its gate, counting the calls it holds and the most it held at once.
type gatedPod struct {
	*fakePod
	mu        sync.Mutex
	cur, most int
	total     int
	token     chan struct{}
	gate      chan struct{}
	once      sync.Once
}

// newGatedPod makes a pod whose gate opens at the latest when the test
// ends, so that its server can close.
func newGatedPod(t *testing.T, name string) *gatedPod {
	g := &gatedPod{token: make(chan struct{}), gate: make(chan struct{})}
	g.fakePod = newFakePod(t, name, g.handler(name))
	t.Cleanup(g.open)
	return g
}

func (g *gatedPod) open() { g.once.Do(func() { close(g.gate) }) }

// release lets one held call answer.
func (g *gatedPod) release() { g.token <- struct{}{} }

func (g *gatedPod) handler(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.cur++
		g.total++
		g.most = max(g.most, g.cur)
		g.mu.Unlock()
		select {
		case <-g.token:
		case <-g.gate:
		}
		g.mu.Lock()
		g.cur--
		g.mu.Unlock()
		answer(func(arg string) function.Result { return function.Result{Result: api.Bytes(name + ":" + arg)} })(w, r)
	}
}

func (g *gatedPod) counts() (cur, most, total int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cur, g.most, g.total
}

// runSteps runs one step of an instance per argument, concurrently; the
// outcomes come back on the channel in any order.
func runSteps(e *testEnv, fn string, args ...string) <-chan *api.FuncInstance {
	out := make(chan *api.FuncInstance, len(args))
	for _, a := range args {
		go func() {
			inst, err := e.s.advance(e.ctx, newInstance(fn, a))
			if err != nil {
				inst = &api.FuncInstance{Status: api.FuncInstanceStatus{Phase: "advance failed", Error: err.Error()}}
			}
			out <- inst
		}()
	}
	return out
}

func collect(t *testing.T, ch <-chan *api.FuncInstance, n int) []*api.FuncInstance {
	t.Helper()
	var out []*api.FuncInstance
	for range n {
		select {
		case inst := <-ch:
			out = append(out, inst)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d steps ended", len(out), n)
		}
	}
	return out
}

// containerConcurrency is a hard limit: with one pod taking 2 calls at
// once, 8 calls get 2 posts at a time and 6 wait (counted as waiting).
func TestPoolContainerConcurrency(t *testing.T) {
	e := newEnv(t, Config{ColdStartTimeout: time.Minute})
	cc := 2
	f := newFunc("f", "", "", func(f *api.Func) { f.Spec.ContainerConcurrency = &cc })
	e.putFunc(f)
	g := newGatedPod(t, "pod-a")
	e.publish(f, g.fakePod)

	const calls = 8
	args := make([]string, calls)
	for i := range args {
		args[i] = fmt.Sprint(i)
	}
	ch := runSteps(e, "f", args...)
	waitFor(t, "2 calls on the pod and 6 waiting", func() bool {
		d := e.d.snapshot().Functions["default/f"]
		cur, _, _ := g.counts()
		return cur == cc && d.Waiting == calls-cc && d.InFlight == calls
	})
	g.open()
	for _, inst := range collect(t, ch, calls) {
		if inst.Status.Phase != api.InstanceSucceeded {
			t.Errorf("step: %s %s", inst.Status.Phase, inst.Status.Error)
		}
	}
	if _, most, total := g.counts(); most > cc || total != calls {
		t.Errorf("the pod had %d calls at once (limit %d), %d in all (want %d)", most, cc, total, calls)
	}
	if d := e.d.snapshot().Functions["default/f"]; d.Started != calls || d.InFlight != 0 || d.Waiting != 0 {
		t.Errorf("demand after the calls: %+v", d)
	}
}

// Calls go to the least busy pod.
func TestPoolLeastBusy(t *testing.T) {
	e := newEnv(t, Config{ColdStartTimeout: time.Minute})
	f := newFunc("f", "", "")
	e.putFunc(f)
	pods := []*gatedPod{newGatedPod(t, "pod-a"), newGatedPod(t, "pod-b"), newGatedPod(t, "pod-c")}
	e.publish(f, pods[0].fakePod, pods[1].fakePod, pods[2].fakePod)
	held := func() []int {
		var n []int
		for _, g := range pods {
			cur, _, _ := g.counts()
			n = append(n, cur)
		}
		return n
	}
	sum := func(n []int) int { return n[0] + n[1] + n[2] }
	var chans []<-chan *api.FuncInstance
	// start starts a call and waits until a pod holds it.
	start := func(i int) {
		t.Helper()
		before := sum(held())
		chans = append(chans, runSteps(e, "f", fmt.Sprint(i)))
		waitFor(t, fmt.Sprintf("call %d to reach a pod", i), func() bool { return sum(held()) == before+1 })
	}
	// Calls started one at a time spread evenly: 2 on each pod.
	for i := range 6 {
		start(i)
	}
	if n := held(); n[0] != 2 || n[1] != 2 || n[2] != 2 {
		t.Fatalf("6 calls on 3 pods held as %v", n)
	}
	// pod-b ends its two calls: the next two go there, the least busy.
	pods[1].release()
	pods[1].release()
	waitFor(t, "pod-b's steps to end", func() bool { return e.d.snapshot().Functions["default/f"].InFlight == 4 })
	start(6)
	start(7)
	if n := held(); n[0] != 2 || n[1] != 2 || n[2] != 2 {
		t.Errorf("after pod-b was freed, calls held as %v, want [2 2 2]", n)
	}
	for _, g := range pods {
		g.open()
	}
	for _, ch := range chans {
		collect(t, ch, 1)
	}
}

// A pod that refuses a call (gone, or draining with 503) did not run it:
// the call goes to another pod.
func TestPoolRefusedCallGoesElsewhere(t *testing.T) {
	e := newEnv(t, Config{ColdStartTimeout: time.Minute})
	f := newFunc("f", "", "")
	e.putFunc(f)
	var refused atomic.Int32
	draining := newFakePod(t, "pod-draining", func(w http.ResponseWriter, r *http.Request) {
		refused.Add(1)
		http.Error(w, "draining", http.StatusServiceUnavailable)
	})
	// A port nothing listens on any more.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := &fakePod{name: "pod-gone", port: int32(l.Addr().(*net.TCPAddr).Port)}
	l.Close()
	good := newFakePod(t, "pod-good", answer(func(arg string) function.Result { return function.Result{Result: api.Bytes("ok " + arg)} }))
	e.publish(f, gone, draining, good)

	for i := range 6 {
		inst := collect(t, runSteps(e, "f", fmt.Sprint(i)), 1)[0]
		st := inst.Status
		if st.Phase != api.InstanceSucceeded || string(st.Result) != fmt.Sprintf("ok %d", i) || st.Steps[0].Pod != "pod-good" {
			t.Errorf("call %d: %s %q %q on %+v", i, st.Phase, st.Result, st.Error, st.Steps)
		}
	}
	if refused.Load() == 0 {
		t.Errorf("the draining pod was never tried")
	}
}

// A pod lost under a call (its connection broken before the answer: it
// died) does not fail the call: it runs again on a pod that answers, and
// the step records the pod lost and why; a call that every pod is lost
// under fails after maxLostPods tries.
func TestPoolCallRunsAgainWhenItsPodIsLost(t *testing.T) {
	e := newEnv(t, Config{ColdStartTimeout: time.Minute})
	f := newFunc("f", "", "")
	e.putFunc(f)
	var died atomic.Int32
	dying := newFakePod(t, "pod-dying", func(w http.ResponseWriter, r *http.Request) {
		if died.Add(1) == 1 {
			// As a pod killed mid-call: the connection drops, no answer.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		answer(func(arg string) function.Result { return function.Result{Result: api.Bytes("ok " + arg)} })(w, r)
	})
	e.publish(f, dying)
	inst := collect(t, runSteps(e, "f", "x"), 1)[0]
	st := inst.Status
	if st.Phase != api.InstanceSucceeded || string(st.Result) != "ok x" || len(st.Steps[0].Retried) != 1 ||
		!strings.HasPrefix(st.Steps[0].Retried[0], "pod-dying: ") || !strings.Contains(st.Steps[0].Retried[0], "lost before it answered") {
		t.Fatalf("call after a lost pod: %s %q %q, steps %+v", st.Phase, st.Result, st.Error, st.Steps)
	}

	g := newFunc("g", "", "")
	e.putFunc(g)
	var tries atomic.Int32
	deadly := newFakePod(t, "pod-deadly", func(w http.ResponseWriter, r *http.Request) {
		tries.Add(1)
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	})
	e.publish(g, deadly)
	inst = collect(t, runSteps(e, "g", "y"), 1)[0]
	if st := inst.Status; st.Phase != api.InstanceFailed || !strings.Contains(st.Error, "lost before it answered") || tries.Load() != maxLostPods+1 {
		t.Errorf("a call every pod is lost under: %s %q after %d tries, want Failed after %d", st.Phase, st.Error, tries.Load(), maxLostPods+1)
	}
}

// Only the pods of the function's ReplicaSet get its calls.
func TestPoolSkipsPodsNotOwned(t *testing.T) {
	e := newEnv(t, Config{ColdStartTimeout: 200 * time.Millisecond})
	f := newFunc("f", "", "")
	e.putFunc(f)
	var stolen atomic.Int32
	stranger := newFakePod(t, "pod-stranger", func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		answer(func(string) function.Result { return function.Result{Result: "stolen"} })(w, r)
	})
	stranger.rs = "rs-someone-else"
	e.publish(f, stranger)
	inst := collect(t, runSteps(e, "f", "x"), 1)[0]
	if inst.Status.Phase != api.InstanceFailed || !strings.Contains(inst.Status.Error, "cold start timed out after 200ms: no pod became ready") {
		t.Errorf("with only a stranger's pod: %s %q", inst.Status.Phase, inst.Status.Error)
	}
	good := newFakePod(t, "pod-good", answer(func(string) function.Result { return function.Result{Result: "mine"} }))
	e.publish(f, stranger, good)
	for range 4 {
		inst := collect(t, runSteps(e, "f", "x"), 1)[0]
		if inst.Status.Result != "mine" {
			t.Errorf("call: %s %q %q", inst.Status.Phase, inst.Status.Result, inst.Status.Error)
		}
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the stranger's pod got %d calls", n)
	}
}

// With no pod, a step waits, counted as waiting (and urgent), and runs as
// soon as a pod is ready; it fails naming the timeout when none comes.
func TestPoolColdStart(t *testing.T) {
	e := newEnv(t, Config{ColdStartTimeout: 300 * time.Millisecond})
	f := newFunc("f", "", "")
	e.putFunc(f)
	inst := collect(t, runSteps(e, "f", "x"), 1)[0]
	if inst.Status.Phase != api.InstanceFailed || !strings.Contains(inst.Status.Error, `function "f": cold start timed out after 300ms: no pod became ready`) {
		t.Errorf("no pod: %s %q", inst.Status.Phase, inst.Status.Error)
	}
	select {
	case <-e.d.urgent():
	default:
		t.Errorf("a waiting step did not make the demand urgent")
	}

	e2 := newEnv(t, Config{ColdStartTimeout: time.Minute})
	e2.putFunc(f)
	ch := runSteps(e2, "f", "y")
	waitFor(t, "the step to wait", func() bool { return e2.d.snapshot().Functions["default/f"].Waiting == 1 })
	e2.publish(f, newFakePod(t, "pod-late", answer(func(arg string) function.Result { return function.Result{Result: api.Bytes("late " + arg)} })))
	if inst := collect(t, ch, 1)[0]; inst.Status.Result != "late y" {
		t.Errorf("after the pod came: %s %q %q", inst.Status.Phase, inst.Status.Result, inst.Status.Error)
	}
}

// Waiting steps wake on the changes that may concern them: their
// function's Endpoints, pods and template, and a v1 step's own pod.
func TestStepperWakesOnChanges(t *testing.T) {
	e := newEnv(t, Config{})
	f := newFunc("f", "", "")
	key := "default/" + function.ObjectName("f")
	otherKey := "default/" + function.ObjectName("g")
	other := e.s.pool.join(otherKey)
	defer e.s.pool.leave(otherKey, other)
	woken := func(ch <-chan struct{}) func() bool {
		return func() bool {
			select {
			case <-ch:
				return true
			default:
				return false
			}
		}
	}
	for _, tc := range []struct {
		name   string
		change func()
	}{
		{"endpoints", func() {
			e.putEndpoints(&api.Endpoints{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: function.ObjectName("f")}})
		}},
		{"function", func() { e.putFunc(f) }},
		{"function's pod", func() {
			e.putPod(&api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "p1", Labels: map[string]string{function.LabelFunc: "f"}}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			turn := e.s.pool.join(key)
			defer e.s.pool.leave(key, turn)
			tc.change()
			waitFor(t, "the waiting step to wake", woken(turn))
		})
	}
	t.Run("v1 step's pod", func(t *testing.T) {
		ch := e.s.changes.Watch(podKey("default", "step-pod"))
		e.putPod(&api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "step-pod"}})
		waitFor(t, "the waiting step to wake", woken(ch))
	})
	select {
	case <-other:
		t.Error("another function's steps woke")
	default:
	}
}

// A freed slot wakes the first waiting step only, and a step that got a
// slot wakes the next; one that leaves passes on a wake it did not use.
func TestPoolQueueWakesInOrder(t *testing.T) {
	e := newEnv(t, Config{})
	p, key := e.s.pool, "default/func-f"
	a, b, c := p.join(key), p.join(key), p.join(key)
	p.wakeFirst(key)
	p.wakeFirst(key) // a is woken already: no one else wakes
	if len(a) != 1 || len(b) != 0 || len(c) != 0 {
		t.Fatalf("wakes: a %d b %d c %d, want a only", len(a), len(b), len(c))
	}
	if !p.first(key, a) || p.first(key, b) {
		t.Fatal("a is not first in line")
	}
	// a leaves without using its wake: b gets it.
	p.leave(key, a)
	if len(b) != 1 || len(c) != 0 {
		t.Fatalf("after a left: b %d c %d, want b woken", len(b), len(c))
	}
	<-b
	p.leave(key, b) // got a slot
	p.wakeFirst(key)
	if len(c) != 1 {
		t.Fatal("the next in line was not woken after a step got a slot")
	}
	p.leave(key, c)
	if q := p.queues[key]; len(q) != 0 {
		t.Fatalf("queue left with %d steps", len(q))
	}
}

// A call waiting for a pod fails, naming the cause, as soon as the
// function's Ready condition says its pods cannot start, or the function
// is deleted; a False condition of an older generation does not count.
func TestPoolFailsFastWhenPodsCannotStart(t *testing.T) {
	e := newEnv(t, Config{ColdStartTimeout: time.Minute})
	cond := func(gen int64) func(*api.Func) {
		return func(f *api.Func) {
			f.Generation = 2
			f.Status.Conditions = []api.FuncCondition{{Type: api.FuncReady, Status: api.ConditionFalse, ObservedGeneration: gen,
				Reason: "CrashLoopBackOff", Message: "import function.py: SyntaxError: expected ':' (function.py, line 1)"}}
		}
	}
	f := newFunc("f", "", "", cond(1))
	e.putFunc(f)
	ch := runSteps(e, "f", "x")
	select {
	case out := <-ch:
		t.Fatalf("the step ended on a stale condition: %+v", out)
	case <-time.After(300 * time.Millisecond):
	}
	e.putFunc(newFunc("f", "", "", cond(2)))
	inst := collect(t, ch, 1)[0]
	if inst.Status.Phase != api.InstanceFailed ||
		!strings.Contains(inst.Status.Error, `function "f": cannot start: CrashLoopBackOff: import function.py: SyntaxError: expected ':' (function.py, line 1)`) {
		t.Errorf("with pods that cannot start: %s %q", inst.Status.Phase, inst.Status.Error)
	}

	// The cache lags a fix: the apiserver has the new generation, the
	// cache still the failure of the old one. The call waits on.
	h := newFunc("h", "", "", cond(2))
	h.Namespace = "default"
	send(e, e.funcs, api.Modified, h, func() (*api.Func, bool) { return e.s.funcs.Get(h.Namespace, h.Name) })
	fixed := newFunc("h", "", "", cond(2))
	fixed.Generation = 3
	e.api.put(fixed, api.FuncsResource)
	ch = runSteps(e, "h", "x")
	select {
	case out := <-ch:
		t.Fatalf("the step ended on the lagging cache's condition: %+v", out)
	case <-time.After(300 * time.Millisecond):
	}
	fixed = newFunc("h", "", "", cond(3))
	fixed.Generation = 3
	e.putFunc(fixed)
	if inst := collect(t, ch, 1)[0]; inst.Status.Phase != api.InstanceFailed || !strings.Contains(inst.Status.Error, "cannot start: CrashLoopBackOff") {
		t.Errorf("the fixed code failing too: %s %q", inst.Status.Phase, inst.Status.Error)
	}

	g := newFunc("g", "", "")
	e.putFunc(g)
	ch = runSteps(e, "g", "x")
	time.Sleep(100 * time.Millisecond)
	send(e, e.funcs, api.Deleted, g, func() (*api.Func, bool) { return e.s.funcs.Get(g.Namespace, g.Name) })
	e.api.delete(g, api.FuncsResource)
	inst = collect(t, ch, 1)[0]
	if inst.Status.Phase != api.InstanceFailed || !strings.Contains(inst.Status.Error, "the function was deleted while the call waited for a pod") {
		t.Errorf("function deleted while waiting: %s %q", inst.Status.Phase, inst.Status.Error)
	}
}
