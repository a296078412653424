package funcrunner

import (
	"context"
	"errors"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// errFuncChanged: the function's code changed while the step waited for a
// pod (its pods being replaced by the new code's); the step goes to what
// the function is now.
var errFuncChanged = errors.New("the function's code changed while the step waited for a pod")

// maxRetargets bounds how often one step follows a change of its function.
const maxRetargets = 5

// targetError: the revision the step is to run on cannot be had.
type targetError struct{ err error }

func (e *targetError) Error() string { return e.err.Error() }

// ran is what a step ran on and how.
type ran struct {
	// f is what ran: the function, or an older revision's unit; rev its
	// revision (0: not known yet).
	f        *api.Func
	rev      int64
	res      *function.Result
	tgt      stepTarget
	streamed []api.FuncSendRecord
}

// run runs step cur of inst on the revision it takes (target), on a pod
// of its pool (v2) or in a pod of its own (v1). A function whose code
// changes while the step waits for a pod is read again: a step on the
// latest revision goes to the new code, one pinned to a revision to that
// revision's unit.
func (s *stepper) run(ctx context.Context, inst *api.FuncInstance, base *api.Func, cur *api.FuncStep, traceparent string) (ran, error) {
	ns := funcNamespace(base)
	for tries := 0; ; tries++ {
		f, rev, err := s.target(ctx, inst, base, cur)
		if err != nil {
			return ran{f: base}, &targetError{err: err}
		}
		r := ran{f: f, rev: rev}
		sc := newStepCall(inst, f, string(cur.Arg), traceparent)
		if len(f.Spec.Outputs) > 0 {
			// Sends are delivered as the function makes them, each
			// recorded by its number in the call: a step run again on
			// another pod sends the same ones again, and a function's
			// call is not made twice.
			sc.send = func(seq int, snd function.Send) api.FuncSendRecord {
				rec := s.deliverOne(ctx, inst, f, seq, snd)
				for len(r.streamed) <= seq {
					r.streamed = append(r.streamed, api.FuncSendRecord{})
				}
				r.streamed[seq] = rec
				return rec
			}
		}
		// Demand is counted per pool: an older revision's unit has its own.
		fnKey := ns + "/" + f.Name
		s.demand.start(fnKey)
		if f.APIVersion == api.FuncAPIVersionV1 {
			r.res, r.tgt, err = s.invokeInFreshPod(ctx, f, inst, sc)
		} else {
			r.res, r.tgt, err = s.pool.invoke(ctx, f, sc)
		}
		s.demand.done(fnKey)
		if errors.Is(err, errFuncChanged) && tries < maxRetargets && ctx.Err() == nil {
			if now, lerr := s.lookupFunc(ctx, ns, base.Name); lerr == nil && now != nil && now.UID == base.UID {
				base = now
				continue
			}
		}
		if r.rev == 0 && f == base {
			// The function just changed: its revision is most likely
			// made by now.
			r.rev = s.latestRevision(f)
		}
		return r, err
	}
}

// codeChanged says whether the cache holds f with other code than f's
// copy: the pods f's copy waits for are being replaced.
func (s *stepper) codeChanged(f *api.Func) bool {
	if function.IsUnit(f.Name) {
		return false // a revision never changes
	}
	cur, ok := s.funcs.Get(funcNamespace(f), f.Name)
	return ok && cur.UID == f.UID && cur.ResourceVersion != f.ResourceVersion && s.hashes.of(cur).code != s.hashes.of(f).code
}
