package funcrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
	"minik8s/pkg/wait"
)

// Driving a claimed instance: a goroutine per instance runs its steps and
// records each outcome by compare-and-swap, until it ends, another runner
// or a step call moves it, or the runner stops.

// drive starts a driver for a claimed instance unless one runs.
func (in *instances) drive(key string, inst *api.FuncInstance) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.driving[key] {
		return
	}
	in.driving[key] = true
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		last := inst
		defer func() {
			in.mu.Lock()
			defer in.mu.Unlock()
			in.markDrivenLocked(key, last)
			delete(in.driving, key)
		}()
		last = in.run1(in.ctx, inst)
	}()
}

// adopt registers a driver the caller runs itself (a synchronous call that
// outlived its wait); release must be called when it ends.
func (in *instances) adopt(key string) (release func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.driving[key] = true
	in.wg.Add(1)
	return func() {
		in.mu.Lock()
		delete(in.driving, key)
		in.mu.Unlock()
		in.wg.Done()
	}
}

// takeOver drives a synchronous call that outlived its wait as a stored
// instance: it records next, the outcome of the step that was running when
// the call was handed off as cur, and runs the rest. The synchronous
// driver adopted the key (adopt) and releases it after.
func (in *instances) takeOver(ctx context.Context, cur, next *api.FuncInstance) {
	stored, err := in.lookup(ctx, cur)
	if err != nil {
		log.WithError(err).WithField("instance", cur.Name).Warn("funcrunner: a call that outlived its wait was not stored; dropping it")
		return
	}
	if stored.Status.Runner != in.self || !call.SameCursor(stored, cur) {
		return // moved meanwhile: whoever has it drives it
	}
	inst, ok := in.record(ctx, stored, next)
	if !ok {
		return
	}
	key := inst.Namespace + "/" + inst.Name
	if call.Terminal(inst) {
		in.finish(ctx, inst)
		in.markDriven(key, inst)
		return
	}
	in.markDriven(key, in.run1(ctx, inst))
}

// lookup reads a handed-off instance, which the apiserver stores right
// after the answer; not finding it within handoffLookup means the
// apiserver failed the call.
func (in *instances) lookup(ctx context.Context, inst *api.FuncInstance) (*api.FuncInstance, error) {
	deadline := time.Now().Add(handoffLookup)
	for {
		stored, err := in.client.FuncInstances(inst.Namespace).Get(ctx, inst.Name)
		if err == nil {
			return stored, nil
		}
		if !errdefs.IsNotFound(err) && ctx.Err() != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		wait.Sleep(ctx, 50*time.Millisecond)
	}
}

// run1 drives an instance step by step until it ends, another runner or a
// step call moves it, or the runner stops. It returns the instance as it
// last knew it.
func (in *instances) run1(ctx context.Context, inst *api.FuncInstance) *api.FuncInstance {
	for ctx.Err() == nil {
		next, err := in.stepper.advance(ctx, inst)
		if err != nil {
			in.release(inst)
			return inst
		}
		stored, ok := in.record(ctx, inst, next)
		if !ok {
			return inst
		}
		inst = stored
		if call.Terminal(inst) {
			in.finish(ctx, inst)
			return inst
		}
	}
	in.release(inst)
	return inst
}

// record stores the outcome of a step (next, computed from inst) by
// compare-and-swap on inst's version: a step is recorded once, whoever else
// runs it. It returns the instance to go on from, and false when this
// runner must stop driving it (another runner has it, it was deleted, or
// the runner stops).
func (in *instances) record(ctx context.Context, inst, next *api.FuncInstance) (*api.FuncInstance, bool) {
	write := call.Copy(next)
	write.ResourceVersion = inst.ResourceVersion
	call.Claim(write, in.self)
	backoff := 100 * time.Millisecond
	failed := 0
	for ctx.Err() == nil {
		var stored *api.FuncInstance
		err := checkSize(write, in.maxBytes)
		if err == nil {
			stored, err = in.client.FuncInstances(inst.Namespace).UpdateStatus(ctx, write)
		}
		switch {
		case err == nil:
			return stored, true
		case errdefs.IsNotFound(err):
			return nil, false
		case errdefs.IsConflict(err):
			cur, gerr := in.client.FuncInstances(inst.Namespace).Get(ctx, inst.Name)
			if gerr != nil {
				if errdefs.IsNotFound(gerr) {
					return nil, false
				}
				wait.Sleep(ctx, backoff)
				continue
			}
			if call.Terminal(cur) || cur.Status.Runner != in.self {
				return nil, false
			}
			if !call.SameCursor(cur, inst) {
				// A step call moved the cursor while the step ran: the
				// step's record is kept, superseded, and the call goes on
				// from the new cursor.
				kept, ok := call.KeepSuperseded(cur, inst, next)
				if !ok {
					return cur, true
				}
				write = kept
				call.Claim(write, in.self)
				continue
			}
			write.ResourceVersion = cur.ResourceVersion
		case errdefs.IsTooLarge(err) || errdefs.IsInvalid(err) || errors.Is(err, errdefs.ErrBadRequest):
			// This outcome will never be stored: the instance ends Failed,
			// without the step's data if need be.
			failed++
			if failed > 2 {
				log.WithError(err).WithField("instance", inst.Name).Error("funcrunner: even the failure of an instance cannot be recorded")
				return nil, false
			}
			write = unrecordable(inst, next, err, failed == 1)
			write.ResourceVersion = inst.ResourceVersion
		default:
			// The apiserver is away: the same outcome is written again, so
			// the step is not run again.
			log.WithError(err).WithField("instance", inst.Name).Debug("funcrunner: recording a step failed, retrying")
			wait.Sleep(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
		}
	}
	return nil, false
}

// unrecordable ends inst Failed saying why next could not be stored; with
// slim, the step's record stays, stripped of its data.
func unrecordable(inst, next *api.FuncInstance, err error, slim bool) *api.FuncInstance {
	var rec *api.FuncStepRecord
	what := "the outcome of the chain"
	if n := len(next.Status.Steps); n > len(inst.Status.Steps) {
		r := next.Status.Steps[n-1]
		what = fmt.Sprintf("the outcome of step %d (function %q)", inst.Status.Hops+1, r.Function)
		if slim {
			rec = &api.FuncStepRecord{Function: r.Function, Start: r.Start, DurationMs: r.DurationMs, RunMs: r.RunMs,
				Pod: r.Pod, Node: r.Node, Check: r.Check, Error: "not recorded: " + err.Error()}
		}
	}
	return ended(inst, rec, "", fmt.Sprintf("%s could not be recorded: %v", what, err))
}

// checkSize refuses an instance larger than limit bytes, what the
// apiserver stores.
func checkSize(inst *api.FuncInstance, limit int) error {
	data, err := json.Marshal(inst)
	if err != nil {
		return fmt.Errorf("encoding instance %s: %w", inst.Name, errdefs.ErrInvalid)
	}
	if limit <= 0 {
		limit = function.MaxInstanceBytes
	}
	if len(data) > limit {
		return fmt.Errorf("the instance takes %d bytes once encoded, more than the %d stored in one write: %w",
			len(data), limit, errdefs.ErrTooLarge)
	}
	return nil
}

// finish delivers an ended instance's callback, once, and records how it went.
func (in *instances) finish(ctx context.Context, inst *api.FuncInstance) {
	if inst.Spec.CallbackURL == "" || inst.Status.Callback != nil {
		return
	}
	st := in.calls.deliver(ctx, inst)
	for attempt := 0; attempt < 3 && ctx.Err() == nil; attempt++ {
		write := call.Copy(inst)
		call.Delivered(write, st)
		_, err := in.client.FuncInstances(inst.Namespace).UpdateStatus(ctx, write)
		if err == nil || errdefs.IsNotFound(err) {
			return
		}
		if errdefs.IsConflict(err) {
			cur, gerr := in.client.FuncInstances(inst.Namespace).Get(ctx, inst.Name)
			if gerr != nil || cur.Status.Callback != nil {
				return
			}
			inst = cur
			continue
		}
		wait.Sleep(ctx, time.Second)
	}
}

// release gives up an instance this runner stops driving before it ended,
// so that another runner takes it at once instead of after the Lease expires.
func (in *instances) release(inst *api.FuncInstance) {
	if in.ctx != nil && function.Abandoned(in.ctx) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	write := call.Copy(inst)
	call.Claim(write, "")
	if _, err := in.client.FuncInstances(inst.Namespace).UpdateStatus(ctx, write); err != nil && !errdefs.IsConflict(err) && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("instance", inst.Name).Debug("funcrunner: releasing an instance failed; it moves when the lease expires")
	}
}
