package call

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

func TestNew(t *testing.T) {
	req := function.CallRequest{Namespace: "ns", Function: "f", ID: "id", Arg: []byte("a"), Traceparent: "tp"}
	created := time.Unix(100, 0).UTC()
	for _, tc := range []struct {
		name   string
		origin Origin
		runner string
		sync   bool
		stamp  bool
	}{
		{"asynchronous, unclaimed", Origin{User: "alice", CallbackURL: "http://x"}, "", false, false},
		{"synchronous, driven in memory", Origin{Runner: "r1", Sync: true, Created: created}, "r1", true, true},
		{"a trigger's, claimed by its runner", Origin{User: "r2", Runner: "r2"}, "r2", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := New(req, tc.origin)
			if inst.Status.Phase != api.InstanceRunning || inst.Status.Runner != tc.runner || inst.Spec.Sync != tc.sync {
				t.Fatalf("status %+v spec.sync %v", inst.Status, inst.Spec.Sync)
			}
			if inst.Status.Next == nil || inst.Status.Next.Function != "f" || inst.Status.Next.Arg != "a" || inst.Spec.Arg != "a" {
				t.Fatalf("next %+v arg %q", inst.Status.Next, inst.Spec.Arg)
			}
			if inst.Labels[function.LabelFunc] != "f" || inst.Name != "id" || inst.Namespace != "ns" || inst.Spec.User != tc.origin.User {
				t.Fatalf("meta %+v user %q", inst.ObjectMeta, inst.Spec.User)
			}
			if (inst.CreationTimestamp != nil) != tc.stamp || Terminal(inst) {
				t.Fatalf("creation %v, terminal %v", inst.CreationTimestamp, Terminal(inst))
			}
		})
	}
}

// A call naming a revision starts on it; a chain that comes back to a
// function runs it on the revision it ran on before.
func TestRevisionPins(t *testing.T) {
	inst := New(function.CallRequest{Namespace: "ns", Function: "f@2", ID: "id", Arg: []byte("a")}, Origin{Runner: "r"})
	if inst.Spec.Function != "f" || inst.Spec.Revision != 2 || inst.Status.Next.Function != "f" || inst.Status.Next.Revision != 2 ||
		inst.Labels[function.LabelFunc] != "f" {
		t.Fatalf("a call of f@2: spec %+v next %+v", inst.Spec, inst.Status.Next)
	}
	toG := Then(inst, &api.FuncStepRecord{Function: "f", Revision: 2}, "g", "b")
	if toG.Status.Next.Revision != 0 {
		t.Fatalf("g, not run yet, is pinned to %d", toG.Status.Next.Revision)
	}
	backToF := Then(toG, &api.FuncStepRecord{Function: "g", Revision: 5}, "f", "c")
	if backToF.Status.Next.Revision != 2 {
		t.Fatalf("back to f: revision %d, want 2", backToF.Status.Next.Revision)
	}
	if toGAgain := Then(backToF, &api.FuncStepRecord{Function: "f", Revision: 2}, "g", "d"); toGAgain.Status.Next.Revision != 5 {
		t.Fatalf("back to g: revision %d, want 5", toGAgain.Status.Next.Revision)
	}
}

func TestTransitions(t *testing.T) {
	base := New(function.CallRequest{Namespace: "ns", Function: "f", ID: "id", Arg: []byte("a")}, Origin{Runner: "r"})
	rec := &api.FuncStepRecord{Function: "f", Result: "b"}
	next := Then(base, rec, "g", "b")
	if base.Status.Hops != 0 || len(base.Status.Steps) != 0 || base.Status.Next.Function != "f" {
		t.Fatalf("Then changed its input: %+v", base.Status)
	}
	if next.Status.Hops != 1 || len(next.Status.Steps) != 1 || next.Status.Next.Function != "g" || Terminal(next) || SameCursor(base, next) {
		t.Fatalf("Then: %+v", next.Status)
	}
	ok := End(next, rec, "done", nil)
	if ok.Status.Phase != api.InstanceSucceeded || ok.Status.Result != "done" || ok.Status.Next != nil || ok.Status.CompletionTime == nil || ok.Status.Hops != 2 {
		t.Fatalf("End ok: %+v", ok.Status)
	}
	bad := End(next, nil, "ignored", Failure("boom"))
	if bad.Status.Phase != api.InstanceFailed || bad.Status.Error != "boom" || bad.Status.Result != "" || bad.Status.Failure.Type != function.FailureCall {
		t.Fatalf("End failed: %+v", bad.Status)
	}
	if err := Goto(ok, "h", "x"); !errdefs.IsConflict(err) {
		t.Fatalf("Goto on an ended call: %v, want a conflict", err)
	}
	moved := Copy(next)
	if err := Goto(moved, "h", "x"); err != nil || moved.Status.Next.Function != "h" || SameCursor(moved, next) {
		t.Fatalf("Goto: %v %+v", err, moved.Status)
	}
	if next.Status.Next.Function != "g" {
		t.Fatal("Copy shares the cursor")
	}
}

func TestKeepSuperseded(t *testing.T) {
	from := New(function.CallRequest{Namespace: "ns", Function: "f", ID: "id", Arg: []byte("a")}, Origin{Runner: "r"})
	rec := &api.FuncStepRecord{Function: "f", Arg: "a", Result: "b"}
	ran := Then(from, rec, "g", "b")  // the step's outcome
	ended := End(from, rec, "b", nil) // the step's outcome, ending the call
	moved := Copy(from)               // a step call moved the cursor meanwhile
	if err := Goto(moved, api.FuncReturn, "stop"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cur    *api.FuncInstance
		ran    *api.FuncInstance
		wantOK bool
	}{
		{"a step that goes on", moved, ran, true},
		{"a step that ends the call", moved, ended, true},
		{"no new record", moved, from, false},
		{"the record is there already", Then(moved, rec, api.FuncReturn, "stop"), ran, false},
		{"the call ended meanwhile", End(moved, nil, "stop", nil), ran, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := KeepSuperseded(tc.cur, from, tc.ran)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			st := out.Status
			if len(st.Steps) != 1 || !st.Steps[0].Superseded || st.Steps[0].Result != "b" || st.Hops != 1 ||
				st.Next.Function != api.FuncReturn || st.Next.Arg != "stop" || Terminal(out) {
				t.Fatalf("kept: %+v", st)
			}
			if len(tc.cur.Status.Steps) != 0 || tc.ran.Status.Steps[0].Superseded {
				t.Fatal("KeepSuperseded changed its input")
			}
		})
	}
}

func TestSetStatus(t *testing.T) {
	running := New(function.CallRequest{Function: "f", ID: "id"}, Origin{})
	ended := End(running, nil, "r", nil)
	withCallback := Copy(ended)
	Delivered(withCallback, api.FuncCallbackStatus{Delivered: true})
	rewritten := Copy(ended)
	rewritten.Status.Result = "other"
	for _, tc := range []struct {
		name      string
		cur, next *api.FuncInstance
		ok        bool
	}{
		{"a running call takes a step's outcome", running, ended, true},
		{"an ended call takes its callback's delivery", ended, withCallback, true},
		{"an ended call keeps its result", ended, rewritten, false},
		{"the delivery is written once", withCallback, withCallback, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := Copy(tc.cur)
			err := SetStatus(cur, tc.next)
			if (err == nil) != tc.ok {
				t.Fatalf("SetStatus: %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errdefs.IsConflict(err) {
				t.Fatalf("refusal %v is not a conflict", err)
			}
		})
	}
}

// sink is a store of records that fails batches on demand.
type sink struct {
	mu        sync.Mutex
	batches   int
	failBatch error
	stored    map[string]bool
}

func (s *sink) CreateMany(_ context.Context, batch []*api.FuncInstance) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches++
	if s.failBatch != nil {
		return s.failBatch
	}
	for _, inst := range batch {
		s.stored[inst.Name] = true
	}
	return nil
}

func (s *sink) Create(_ context.Context, inst *api.FuncInstance) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored[inst.Name] {
		return errdefs.ErrAlreadyExists
	}
	s.stored[inst.Name] = true
	return nil
}

func TestRecordsStoreEveryRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail error
	}{
		{"in batches", nil},
		{"one by one when a batch fails", errors.New("too large together")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{stored: map[string]bool{}, failBatch: tc.fail}
			w := NewRecords(s, RecordOptions{Workers: 2, Linger: 20 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { w.Run(ctx); close(done) }()
			const n = 300
			for i := range n {
				inst := End(New(function.CallRequest{Namespace: "ns", Function: "f", ID: string(rune('A' + i))}, Origin{}), nil, "r", nil)
				w.Add(context.Background(), inst)
			}
			cancel()
			<-done
			if len(s.stored) != n {
				t.Fatalf("stored %d records, want %d", len(s.stored), n)
			}
			if _, ok := w.Get("ns", "A"); ok {
				t.Fatal("a stored record is still pending")
			}
			if tc.fail == nil && s.batches >= n {
				t.Fatalf("%d batches for %d records: not batched", s.batches, n)
			}
		})
	}
}
