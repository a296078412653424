package funcrunner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
)

func TestAdvance(t *testing.T) {
	e := newEnv(t, Config{HopLimit: 3, ColdStartTimeout: 20 * time.Second})
	no := false
	result := func(r string) func(string) function.Result {
		return func(arg string) function.Result {
			return function.Result{Result: api.Bytes(r + arg), Output: "printed " + arg, DurationMs: 7, Pod: "runtime-says"}
		}
	}
	funcs := []struct {
		f   *api.Func
		h   http.HandlerFunc
		lag bool // only the apiserver knows the function yet
	}{
		{f: newFunc("echo", "next", "RETURN"), h: answer(result("echo:"))},
		{f: newFunc("last", "", ""), h: answer(result("done:"))},
		{f: newFunc("checker", "l", "r"), h: answer(func(arg string) function.Result {
			return function.Result{Result: api.Bytes(arg), HasCheck: true, Check: &no}
		})},
		{f: newFunc("raises", "", ""), h: answer(func(string) function.Result {
			return function.Result{Output: "before", Error: &function.Error{Type: "ZeroDivisionError", Message: "division by zero", Trace: "Traceback (most recent call last)"}}
		})},
		{f: newFunc("huge", "", ""), h: answer(func(string) function.Result {
			return function.Result{Result: api.Bytes(strings.Repeat("x", call.MaxArgBytes+1))}
		})},
		{f: newFunc("big", "next", ""), h: answer(func(string) function.Result {
			return function.Result{Result: api.Bytes(strings.Repeat("y", 20<<10))}
		})},
		{f: newFunc("broken", "", ""), h: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}},
		{f: newFunc("fresh", "", ""), h: answer(result("fresh:")), lag: true},
	}
	for _, fn := range funcs {
		if fn.lag {
			e.api.put(fn.f, api.FuncsResource)
		} else {
			e.putFunc(fn.f)
		}
		e.publish(fn.f, newFakePod(t, "pod-"+fn.f.Name, fn.h))
	}

	withSteps := func(inst *api.FuncInstance, callers ...string) *api.FuncInstance {
		for _, c := range callers {
			inst.Status.Steps = append(inst.Status.Steps, api.FuncStepRecord{Function: c})
			inst.Status.Hops++
		}
		return inst
	}
	noNext := newInstance("echo", "a")
	noNext.Status.Next = nil
	for _, tc := range []struct {
		name       string
		inst       *api.FuncInstance
		phase      string
		errHas     []string
		result     string
		next       *api.FuncStep
		hops       int
		record     bool // a step record is appended
		recordWant func(t *testing.T, r api.FuncStepRecord)
	}{
		{name: "no next step", inst: noNext, phase: api.InstanceFailed, errHas: []string{"instance has no next step"}},
		{name: "RETURN", inst: withSteps(&api.FuncInstance{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "i"},
			Status: api.FuncInstanceStatus{Next: &api.FuncStep{Function: api.FuncReturn, Arg: "the end"}}}, "echo"),
			phase: api.InstanceSucceeded, result: "the end", hops: 1},
		{name: "hop limit", inst: withSteps(newInstance("echo", "a"), "echo", "echo", "echo"), phase: api.InstanceFailed,
			errHas: []string{"hop limit of 3 reached", `next was "echo"`}, hops: 3},
		{name: "function not found", inst: withSteps(newInstance("missing_fn", "a"), "dangling"), phase: api.InstanceFailed,
			errHas: []string{`function "missing_fn" not found (called by "dangling")`}, hops: 1},
		{name: "first function not found", inst: newInstance("missing_fn", "a"), phase: api.InstanceFailed,
			errHas: []string{`function "missing_fn" not found`}},
		{name: "step to left", inst: newInstance("echo", "a"), phase: api.InstanceRunning,
			next: &api.FuncStep{Function: "next", Arg: "echo:a"}, hops: 1, record: true,
			recordWant: func(t *testing.T, r api.FuncStepRecord) {
				if r.Function != "echo" || r.Arg != "a" || r.Result != "echo:a" || r.Output != "printed a" || r.RunMs != 7 ||
					r.Pod != "pod-echo" || r.Node != "node-a" || r.Start == nil || r.Check != nil {
					t.Errorf("record %+v", r)
				}
			}},
		{name: "check false goes right", inst: newInstance("checker", "c"), phase: api.InstanceRunning,
			next: &api.FuncStep{Function: "r", Arg: "c"}, hops: 1, record: true,
			recordWant: func(t *testing.T, r api.FuncStepRecord) {
				if r.Check == nil || *r.Check {
					t.Errorf("check not recorded false: %+v", r)
				}
			}},
		{name: "last step", inst: newInstance("last", "z"), phase: api.InstanceSucceeded, result: "done:z", hops: 1, record: true},
		{name: "function only in the apiserver", inst: newInstance("fresh", "q"), phase: api.InstanceSucceeded, result: "fresh:q", hops: 1, record: true},
		{name: "function raises", inst: newInstance("raises", "a"), phase: api.InstanceFailed,
			errHas: []string{`function "raises" failed: ZeroDivisionError: division by zero`}, hops: 1, record: true,
			recordWant: func(t *testing.T, r api.FuncStepRecord) {
				if !strings.Contains(r.Error, "Traceback") || r.Output != "before" {
					t.Errorf("failed step record: %+v", r)
				}
			}},
		{name: "result above the limit", inst: newInstance("huge", "a"), phase: api.InstanceFailed,
			errHas: []string{fmt.Sprint(call.MaxArgBytes + 1), fmt.Sprint(call.MaxArgBytes)}, hops: 1, record: true},
		{name: "records are cut, the next argument is not", inst: newInstance("big", strings.Repeat("a", 20<<10)), phase: api.InstanceRunning,
			next: &api.FuncStep{Function: "next", Arg: api.Bytes(strings.Repeat("y", 20<<10))}, hops: 1, record: true,
			recordWant: func(t *testing.T, r api.FuncStepRecord) {
				if !strings.HasPrefix(string(r.Result), strings.Repeat("y", maxRecordBytes)+"… (4096 bytes cut)") ||
					!strings.HasSuffix(string(r.Arg), "… (4096 bytes cut)") {
					t.Errorf("record not cut: result %d bytes, arg %d bytes", len(r.Result), len(r.Arg))
				}
			}},
		{name: "pod error", inst: newInstance("broken", "a"), phase: api.InstanceFailed,
			errHas: []string{`function "broken": the pod at 127.0.0.1 answered 500`, "boom"}, hops: 1, record: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(tc.inst)
			out, err := e.s.advance(context.Background(), tc.inst)
			if err != nil {
				t.Fatalf("advance: %v", err)
			}
			if after, _ := json.Marshal(tc.inst); string(after) != string(before) {
				t.Errorf("advance changed its input")
			}
			if out == tc.inst {
				t.Fatal("advance returned its input, not a copy")
			}
			st := out.Status
			if st.Phase != tc.phase || string(st.Result) != tc.result || st.Hops != tc.hops {
				t.Errorf("phase %s result %.40q hops %d, want %s %.40q %d (error %q)", st.Phase, st.Result, st.Hops, tc.phase, tc.result, tc.hops, st.Error)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(st.Error, s) {
					t.Errorf("error %q does not say %q", st.Error, s)
				}
			}
			if len(tc.errHas) == 0 && st.Error != "" {
				t.Errorf("error %q", st.Error)
			}
			ended := tc.phase != api.InstanceRunning
			if ended != (st.CompletionTime != nil) || ended != (st.Next == nil) {
				t.Errorf("ended %v but completionTime %v next %+v", ended, st.CompletionTime, st.Next)
			}
			if tc.next != nil && (st.Next == nil || *st.Next != *tc.next) {
				t.Errorf("next %.60v, want %.60v", st.Next, tc.next)
			}
			if want := len(tc.inst.Status.Steps) + map[bool]int{true: 1}[tc.record]; len(st.Steps) != want {
				t.Fatalf("%d step records, want %d", len(st.Steps), want)
			}
			if tc.recordWant != nil {
				tc.recordWant(t, st.Steps[len(st.Steps)-1])
			}
			if out.Name != tc.inst.Name || out.ResourceVersion != tc.inst.ResourceVersion || out.Status.Runner != tc.inst.Status.Runner {
				t.Errorf("identity changed: %s %s %s", out.Name, out.ResourceVersion, out.Status.Runner)
			}
		})
	}
}

func TestEnded(t *testing.T) {
	inst := newInstance("f", "a")
	inst.Status.Steps = []api.FuncStepRecord{{Function: "f", Result: "r1"}}
	inst.Status.Hops = 1
	inst.Status.Error = "old"
	rec := &api.FuncStepRecord{Function: "g", Result: "r2"}
	for _, tc := range []struct {
		name          string
		rec           *api.FuncStepRecord
		result, err   string
		phase         string
		steps, hops   int
		wantResult    string
		wantErrorText string
	}{
		{"succeeded", nil, "res", "", api.InstanceSucceeded, 1, 1, "res", ""},
		{"succeeded with a record", rec, "res", "", api.InstanceSucceeded, 2, 2, "res", ""},
		{"failed", nil, "ignored", "it broke", api.InstanceFailed, 1, 1, "", "it broke"},
		{"failed with a record", rec, "", "it broke", api.InstanceFailed, 2, 2, "", "it broke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(inst)
			out := ended(inst, tc.rec, tc.result, tc.err)
			st := out.Status
			if st.Phase != tc.phase || string(st.Result) != tc.wantResult || st.Error != tc.wantErrorText ||
				len(st.Steps) != tc.steps || st.Hops != tc.hops || st.Next != nil || st.CompletionTime == nil {
				t.Errorf("got %+v", st)
			}
			if tc.rec != nil && st.Steps[len(st.Steps)-1].Result != tc.rec.Result {
				t.Errorf("record not appended: %+v", st.Steps)
			}
			// The copy is deep: changing it leaves the input as it was.
			out.Status.Steps[0].Result = "changed"
			out.Labels["x"] = "y"
			if after, _ := json.Marshal(inst); string(after) != string(before) {
				t.Errorf("input changed: %s", after)
			}
		})
	}
}

// A step waiting for a pod ends with its context: advance returns the
// context's error and no outcome.
func TestAdvanceContextEnds(t *testing.T) {
	e := newEnv(t, Config{ColdStartTimeout: time.Minute})
	e.putFunc(newFunc("cold", "", ""))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		out, err := e.s.advance(ctx, newInstance("cold", "a"))
		if out != nil {
			err = fmt.Errorf("outcome %+v with error %v", out.Status, err)
		}
		done <- err
	}()
	waitFor(t, "the step to wait", func() bool { return e.d.snapshot().Functions["default/cold"].Waiting == 1 })
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("got %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("advance did not return when its context ended")
	}
	if d := e.d.snapshot().Functions["default/cold"]; d.Waiting != 0 || d.InFlight != 0 || d.Started != 1 {
		t.Errorf("demand after the step: %+v", d)
	}
}
