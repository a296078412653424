package call

import (
	"fmt"
	"reflect"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// The transitions of a call. Those that compute an outcome (Then, End)
// return a deep copy and leave inst as it was: the runner stores the copy
// by compare-and-swap on inst's version. The others change inst in place:
// their caller holds a copy of its own.

// Then is inst after a step that passed the call on: rec appended, one
// more hop, and fn with arg to run next.
func Then(inst *api.FuncInstance, rec *api.FuncStepRecord, fn, arg string) *api.FuncInstance {
	out := Copy(inst)
	out.Status.Phase = api.InstanceRunning
	if rec != nil {
		out.Status.Steps = append(out.Status.Steps, copyRecord(*rec))
		out.Status.Hops++
	}
	out.Status.Next = &api.FuncStep{Function: fn, Arg: api.Bytes(arg), Revision: pinned(out, fn)}
	return out
}

// End is inst ended: Succeeded with result when failure is nil, else
// Failed with failure; rec (may be nil) is appended first.
func End(inst *api.FuncInstance, rec *api.FuncStepRecord, result string, failure *api.FuncError) *api.FuncInstance {
	out := Copy(inst)
	if rec != nil {
		out.Status.Steps = append(out.Status.Steps, copyRecord(*rec))
		out.Status.Hops++
	}
	now := time.Now().UTC()
	out.Status.CompletionTime = &now
	out.Status.Next = nil
	if failure != nil {
		out.Status.Phase = api.InstanceFailed
		out.Status.Result = ""
		out.Status.Error = failure.Message
		out.Status.Failure = failure
	} else {
		out.Status.Phase = api.InstanceSucceeded
		out.Status.Result = api.Bytes(result)
		out.Status.Error = ""
		out.Status.Failure = nil
	}
	return out
}

// TypeResult records, in place, how a succeeded call's result answers
// over HTTP (function.ResultJSON, function.ResultHTTP; "" for text).
func TypeResult(inst *api.FuncInstance, typ string) {
	if inst.Status.Phase == api.InstanceSucceeded {
		inst.Status.ResultType = typ
	}
}

// Failure is the platform's failure of a call (not the function's own
// exception): msg with the type function.FailureCall.
func Failure(msg string) *api.FuncError {
	return &api.FuncError{Message: msg, Type: function.FailureCall}
}

// Goto moves an unfinished call's cursor: fn runs next with arg (the
// reference design's step call, PUT /api/funcs/FN/ID). The runner
// driving it follows the new cursor. An ended call is final (409).
func Goto(inst *api.FuncInstance, fn, arg string) error {
	if Terminal(inst) {
		return errEnded(inst)
	}
	inst.Status.Phase = api.InstanceRunning
	inst.Status.Error = ""
	inst.Status.Result = ""
	inst.Status.CompletionTime = nil
	inst.Status.Next = &api.FuncStep{Function: fn, Arg: api.Bytes(arg)}
	return nil
}

// KeepSuperseded is cur, whose cursor a step call moved while the step
// that started from from ran (ran is that step's outcome), with the
// step's record kept in its history, marked superseded: the step ran, and
// the call goes on from cur's cursor instead of its outcome. ok is false
// when ran holds no new record, or when cur's history is no longer
// from's (the record is there already).
func KeepSuperseded(cur, from, ran *api.FuncInstance) (out *api.FuncInstance, ok bool) {
	n := len(from.Status.Steps)
	if Terminal(cur) || len(ran.Status.Steps) <= n || len(cur.Status.Steps) != n {
		return nil, false
	}
	out = Copy(cur)
	rec := copyRecord(ran.Status.Steps[n])
	rec.Superseded = true
	out.Status.Steps = append(out.Status.Steps, rec)
	out.Status.Hops++
	return out, true
}

// Claim makes runner the driver of inst ("" releases it for another
// runner to take at once).
func Claim(inst *api.FuncInstance, runner string) {
	inst.Status.Runner = runner
}

// Delivered records how the callback of an ended call went.
func Delivered(inst *api.FuncInstance, st api.FuncCallbackStatus) {
	inst.Status.Callback = &st
}

// AddSpans keeps spans of the call's trace with it.
func AddSpans(inst *api.FuncInstance, spans ...api.FuncSpan) {
	inst.Status.Trace = append(inst.Status.Trace, spans...)
}

// Slim drops an instance's payload in place: arguments, result, error,
// steps and callback. For readers of many instances that need only their
// phase and times (the garbage collector's watch).
func Slim(inst *api.FuncInstance) {
	inst.Spec.Arg = ""
	inst.Status.Result, inst.Status.Error = "", ""
	inst.Status.Next, inst.Status.Steps, inst.Status.Callback = nil, nil, nil
}

// errEnded refuses a change to an ended call: a result, once stored, is
// the answer.
func errEnded(inst *api.FuncInstance) error {
	return fmt.Errorf("function instance %q has ended (%s): a finished instance cannot be changed: %w",
		inst.Name, inst.Status.Phase, errdefs.ErrConflict)
}

// SetStatus takes the status a runner wrote (next) onto the stored
// instance cur: a claim, a step's outcome, a release. An ended call is
// final but for one write, once: the delivery of its callback.
func SetStatus(cur, next *api.FuncInstance) error {
	if Terminal(cur) && !onlyCallback(&cur.Status, &next.Status) {
		return errEnded(cur)
	}
	cur.Status = next.Status
	return nil
}

// onlyCallback says whether next only adds the delivery of the callback to
// the ended status cur.
func onlyCallback(cur, next *api.FuncInstanceStatus) bool {
	if cur.Callback != nil || next.Callback == nil {
		return false
	}
	a, b := *cur, *next
	a.Callback, b.Callback = nil, nil
	return reflect.DeepEqual(a, b)
}
