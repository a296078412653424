// Package call keeps the rules of a call record, the FuncInstance: how one
// is made for each way a call arrives, every change of its status, when
// it has ended, and its limits. Every writer of an instance (the
// apiserver, which stores and hands over; the function runner, which
// advances it; the garbage collector, which slims what it watches) goes
// through these functions, so each status field has one rule-keeper; the
// import check of `make vet` refuses a status field assigned elsewhere.
package call

import (
	"fmt"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// MaxArgBytes bounds an argument, counted in bytes as sent: a call's, and
// what a chain passes from step to step.
const MaxArgBytes = 512 << 10

// CheckArg refuses an argument of n bytes over MaxArgBytes (413).
func CheckArg(n int) error {
	if n > MaxArgBytes {
		return fmt.Errorf("argument of %d bytes is larger than the limit of %d: %w", n, MaxArgBytes, errdefs.ErrTooLarge)
	}
	return nil
}

// Origin says who made a call and who drives it from the start.
type Origin struct {
	// User is who made the call (spec.user): the caller, or the runner
	// that made it for a trigger.
	User string
	// CallbackURL is where the result is POSTed once the call ends.
	CallbackURL string
	// Runner claims the call from the start ("": a runner claims it once
	// it is stored).
	Runner string
	// Sync marks a call driven in memory and stored once it ended (or
	// outlived its wait); Created is then its creation time, which the
	// store would otherwise set.
	Sync    bool
	Created time.Time
}

// New is the record of a call just accepted. It reads as Running from the
// start, as the reference design's calls do: it is accepted and will run;
// status.runner tells whether a runner has it yet.
func New(req function.CallRequest, o Origin) *api.FuncInstance {
	fn, rev, _ := function.SplitTarget(req.Function)
	arg := api.Bytes(req.Arg)
	inst := &api.FuncInstance{
		TypeMeta:   api.TypeMeta{APIVersion: api.FuncInstancesResource.GroupVersion(), Kind: api.FuncInstancesResource.Kind},
		ObjectMeta: api.ObjectMeta{Name: req.ID, Namespace: req.Namespace, Labels: map[string]string{function.LabelFunc: fn}},
		Spec: api.FuncInstanceSpec{Function: fn, Revision: rev, Arg: arg, CallbackURL: o.CallbackURL, CallbackEvent: o.CallbackURL != "" && req.AcceptEvent, User: o.User, Sync: o.Sync,
			Event: req.Event, Trigger: req.Trigger, Traceparent: req.Traceparent},
		Status: api.FuncInstanceStatus{Phase: api.InstanceRunning, Runner: o.Runner, Next: &api.FuncStep{Function: fn, Arg: arg, Revision: rev}},
	}
	if !o.Created.IsZero() {
		inst.CreationTimestamp = &o.Created
	}
	return inst
}

// Default completes the status of an instance stored as written by hand
// (kubectl create): Pending until its first step is recorded.
func Default(inst *api.FuncInstance) {
	if inst.Status.Phase == "" {
		inst.Status.Phase = api.InstancePending
	}
}

// Terminal says whether a call has ended: its result or error is final.
func Terminal(inst *api.FuncInstance) bool {
	return inst.Status.Phase == api.InstanceSucceeded || inst.Status.Phase == api.InstanceFailed
}

// SameCursor says whether a and b stand at the same step: the same number
// of steps run and the same next step. A step call (PUT) or another
// runner moves the cursor.
func SameCursor(a, b *api.FuncInstance) bool {
	return a.Status.Hops == b.Status.Hops && sameStep(a.Status.Next, b.Status.Next)
}

func sameStep(a, b *api.FuncStep) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Function == b.Function && a.Arg == b.Arg && a.Revision == b.Revision
}

// pinned is the revision inst ran fn on last (0: none yet): a chain that
// comes back to a function runs it on the same revision.
func pinned(inst *api.FuncInstance, fn string) int64 {
	for i := len(inst.Status.Steps) - 1; i >= 0; i-- {
		if s := inst.Status.Steps[i]; s.Function == fn && s.Revision != 0 {
			return s.Revision
		}
	}
	if inst.Spec.Function == fn {
		return inst.Spec.Revision
	}
	return 0
}
