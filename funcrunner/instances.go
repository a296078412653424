package funcrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
	"minik8s/pkg/wait"
	"minik8s/pkg/workqueue"
)

// instances is the runner's controller of unfinished FuncInstances: it
// claims the unclaimed ones and those whose runner's Lease expired (a
// compare-and-swap of status.runner, so one runner wins), and drives each
// it holds in a goroutine of its own.
type instances struct {
	client   *client.Client
	self     string
	informer *cache.Informer[api.FuncInstance, *api.FuncInstance]
	members  *members
	stepper  *stepper
	calls    *callbacks
	queue    *workqueue.Queue

	// ctx is the runner's lifetime, set before run; drivers end with it.
	ctx     context.Context
	mu      sync.Mutex
	driving map[string]bool
	// driven holds, for instances whose driver here has ended, the last
	// resourceVersion the driver saw: the informer may still bring older
	// copies (claimed by this runner, not ended), which must not start
	// the step that was already run again.
	driven map[string]uint64
	wg     sync.WaitGroup
}

// claimDelay is how long a runner leaves an unclaimed instance to the
// runner preferred for it before claiming it itself.
const claimDelay = time.Second

func newInstances(c *client.Client, self string, inf *cache.Informer[api.FuncInstance, *api.FuncInstance], m *members, s *stepper, cb *callbacks) *instances {
	in := &instances{client: c, self: self, informer: inf, members: m, stepper: s, calls: cb,
		queue: workqueue.New(), driving: map[string]bool{}, driven: map[string]uint64{}}
	inf.AddEventHandler(cache.Handler[*api.FuncInstance]{
		OnAdd:    func(o *api.FuncInstance) { in.queue.Add(cache.Key(o)) },
		OnUpdate: func(_, o *api.FuncInstance) { in.queue.Add(cache.Key(o)) },
		// An ended instance leaves the informer: its sync forgets it.
		OnDelete: func(o *api.FuncInstance) { in.queue.Add(cache.Key(o)) },
	})
	return in
}

// run syncs instances until ctx ends. A runner's Lease expires without an
// event, so every second the instances of runners no longer live are
// looked at again.
func (in *instances) run(ctx context.Context, workers int) {
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := time.Now()
			for _, inst := range in.informer.Lister().List(nil) {
				if inst.Status.Runner != in.self && !in.members.isLive(inst.Status.Runner, now) {
					in.queue.Add(cache.Key(inst))
				}
			}
		}
	}()
	workqueue.Run(ctx, in.queue, workers, "funcinstances", in.sync)
	in.wg.Wait()
}

func (in *instances) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	inst, ok := in.informer.Lister().Get(ns, name)
	if !ok || call.Terminal(inst) {
		in.forgetDriven(key)
		return nil
	}
	if in.isDriving(key) || in.stale(key, inst) {
		return nil
	}
	if inst.Status.Runner == in.self {
		// Ours (resumed after a restart under the same identity, or handed
		// over by a synchronous call whose driver has ended).
		in.drive(key, cache.DeepCopy(inst))
		return nil
	}
	now := time.Now()
	if inst.Status.Runner != "" && in.members.isLive(inst.Status.Runner, now) {
		return nil
	}
	if p := preferred(in.members.live(now), inst.Name); p != in.self && in.queue.NumRequeues(key) == 0 {
		// Another runner should take it; look again later in case it does not.
		in.queue.AddAfter(key, claimDelay)
		return nil
	}
	claim := cache.DeepCopy(inst)
	prev := claim.Status.Runner
	call.Claim(claim, in.self)
	claimed, err := in.client.FuncInstances(ns).UpdateStatus(ctx, claim)
	if errdefs.IsConflict(err) || errdefs.IsNotFound(err) {
		return nil // someone else moved it; the informer brings the news
	}
	if err != nil {
		return fmt.Errorf("claiming instance %s: %w", key, err)
	}
	if prev != "" {
		log.WithFields(log.Fields{"instance": name, "from": prev}).Info("funcrunner: took over an instance of a runner that is gone")
	}
	in.drive(key, claimed)
	return nil
}

func (in *instances) isDriving(key string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.driving[key]
}

// stale says whether inst is a copy older than what a driver here has
// already seen of it.
func (in *instances) stale(key string, inst *api.FuncInstance) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	last, ok := in.driven[key]
	if !ok {
		return false
	}
	rv, err := strconv.ParseUint(inst.ResourceVersion, 10, 64)
	if err == nil && rv <= last {
		return true
	}
	delete(in.driven, key) // newer news: decide on it
	return false
}

// markDriven notes the last copy a driver of key saw, so that older copies
// the informer still brings are not driven again.
func (in *instances) markDriven(key string, last *api.FuncInstance) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.markDrivenLocked(key, last)
}

func (in *instances) markDrivenLocked(key string, last *api.FuncInstance) {
	rv, err := strconv.ParseUint(last.ResourceVersion, 10, 64)
	if err != nil {
		return
	}
	// Gone from the informer already (its delete was handled): no older
	// copy can follow, and a mark would never be forgotten.
	ns, name := cache.SplitKey(key)
	if _, ok := in.informer.Lister().Get(ns, name); !ok {
		return
	}
	in.driven[key] = rv
}

func (in *instances) forgetDriven(key string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.driven, key)
}

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
	write := cache.DeepCopy(next)
	write.ResourceVersion = inst.ResourceVersion
	call.Claim(write, in.self)
	backoff := 100 * time.Millisecond
	failed := 0
	for ctx.Err() == nil {
		var stored *api.FuncInstance
		err := checkSize(write)
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
				// A step call moved the cursor: go on from there.
				return cur, true
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

// checkSize refuses an instance larger than the apiserver stores.
func checkSize(inst *api.FuncInstance) error {
	data, err := json.Marshal(inst)
	if err != nil {
		return fmt.Errorf("encoding instance %s: %w", inst.Name, errdefs.ErrInvalid)
	}
	if len(data) > function.MaxInstanceBytes {
		return fmt.Errorf("the instance takes %d bytes once encoded, more than the %d stored in one write: %w",
			len(data), function.MaxInstanceBytes, errdefs.ErrTooLarge)
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
		write := cache.DeepCopy(inst)
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
	if in.ctx != nil && abandoned(in.ctx) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	write := cache.DeepCopy(inst)
	call.Claim(write, "")
	if _, err := in.client.FuncInstances(inst.Namespace).UpdateStatus(ctx, write); err != nil && !errdefs.IsConflict(err) && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("instance", inst.Name).Debug("funcrunner: releasing an instance failed; it moves when the lease expires")
	}
}
