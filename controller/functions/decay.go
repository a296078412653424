package functions

import (
	"context"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/events"
	"minik8s/pkg/function"
	"minik8s/pkg/wait"
)

// decayLoop lowers the counter of every idle function by one per interval,
// never below its minimum; the ReplicaSet follows on the next sync.
func (c *Controller) decayLoop(ctx context.Context) {
	wait.Every(ctx, c.cfg.ScaleInterval, func() {
		for _, f := range c.funcs.Lister().List(nil) {
			if err := c.decay(ctx, f); err != nil && ctx.Err() == nil {
				log.WithError(err).WithField("func", f.Name).Debug("counter decay: will retry next interval")
			}
		}
		c.decayUnits(ctx)
	})
}

func (c *Controller) decay(ctx context.Context, cached *api.Func) error {
	rs, _ := c.rss.Lister().Get(cached.Namespace, function.ObjectName(cached.Name))
	now := c.now()
	demand := c.demand.snapshot(cache.Key(cached), now)
	if demand.Started > 0 {
		return nil // calls not counted yet: the sync takes them in first
	}
	next, ok := decayStep(cached, rs, now, c.cfg.IdleWindow, demand.floor(&cached.Spec))
	if !ok {
		return nil
	}
	f := cache.DeepCopy(cached)
	f.Status.Counter = next
	// Conditional on the cached version: a call counted meanwhile wins.
	if _, err := c.client.Funcs(f.Namespace).UpdateStatus(ctx, f); err != nil {
		return err
	}
	log.WithFields(log.Fields{"func": f.Name, "counter": f.Status.Counter}).Info("idle function scaled down one step")
	events.Eventf(c.cfg.Events, f, api.EventTypeNormal, "ScaledDown", "Idle for %s: counter lowered to %d", idleWindow(f, c.cfg.IdleWindow), f.Status.Counter)
	return nil
}

// idleWindow is how long without a call makes f idle: its own
// spec.idleTimeoutSeconds, else the controller's window.
func idleWindow(f *api.Func, dflt time.Duration) time.Duration {
	if t := f.Spec.IdleTimeoutSeconds; t != nil {
		return time.Duration(*t) * time.Second
	}
	return dflt
}

// decayStep says whether an idle function's counter goes down now, and to
// what. It steps down only once the pool's ReplicaSet (as the informer sees
// it) runs the current counter, so the counter is never more than one step
// ahead of the ReplicaSet: however many ticks pass before a sync writes the
// ReplicaSet (merged queue keys, a lagging informer, a failed write), the
// pool shrinks one step at a time. A lagging cache only delays a step. It
// never goes below floor, the pods the calls in flight need.
func decayStep(f *api.Func, rs *api.ReplicaSet, now time.Time, idle time.Duration, floor int) (int, bool) {
	if f.APIVersion == api.FuncAPIVersionV1 || f.Status.ReplicaSetUID == "" {
		return 0, false
	}
	lo, _, hi := validation.FuncBounds(&f.Spec)
	counter := clamp(f.Status.Counter, lo, hi)
	if counter <= lo || counter <= floor {
		return 0, false
	}
	last := f.CreationTimestamp
	if f.Status.TimeStamp != nil {
		last = f.Status.TimeStamp
	}
	if last != nil && now.Sub(*last) < idleWindow(f, idle) {
		return 0, false
	}
	if rs == nil || rs.UID != f.Status.ReplicaSetUID || rs.Spec.Replicas == nil || int(*rs.Spec.Replicas) != counter {
		return 0, false // the previous step is not applied yet
	}
	return counter - 1, true
}
