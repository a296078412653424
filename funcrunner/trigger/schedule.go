package trigger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// Schedules are fired by one runner at a time: the holder of the Lease
// ScheduleLeaseName (renewed every RunnerRenewInterval, taken over when it
// lapses). Each tick is one asynchronous call, stored before anything
// else as a FuncInstance whose name is derived from the trigger and the
// tick: a tick fired twice (a holder that lost its Lease mid-tick) is
// refused by the store as a duplicate. status.lastFired is the last tick
// fired; the next holder goes on from it, so ticks missed while no one
// held the schedules are fired late (up to maxCatchUp of them), not
// dropped.

// ScheduleLeaseName is the Lease of the runner firing the schedules.
const ScheduleLeaseName = "funcrunner-schedules"

// maxCatchUp bounds the missed ticks of one trigger fired late.
const maxCatchUp = 1000

// Schedules fires the schedule triggers while it holds their Lease.
type Schedules struct {
	self     string
	client   *client.Client
	triggers *cache.Informer[api.Trigger, *api.Trigger]
	refs     Refs
	lease    *api.Lease // held, or nil
	// fired is the last tick fired per trigger UID, ahead of the
	// informer's copy of status.lastFired.
	fired map[string]time.Time
}

// NewSchedules returns the firer of runner self; Run fires.
func NewSchedules(self string, c *client.Client, triggers *cache.Informer[api.Trigger, *api.Trigger], refs Refs) *Schedules {
	return &Schedules{self: self, client: c, triggers: triggers, refs: refs, fired: map[string]time.Time{}}
}

// run fires the schedules while this runner holds their Lease, until ctx
// ends; it lets the Lease go on the way out.
func (s *Schedules) Run(ctx context.Context) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastRenew := time.Time{}
	for {
		now := time.Now()
		var schedules []*api.Trigger
		for _, t := range s.triggers.Lister().List(nil) {
			if t.Spec.Schedule != nil {
				schedules = append(schedules, t)
			}
		}
		switch {
		case len(schedules) == 0:
			// Nothing to fire: no Lease to hold and renew.
			s.release()
		case now.Sub(lastRenew) >= function.RunnerRenewInterval || s.lease == nil:
			s.hold(ctx, now)
			lastRenew = now
		}
		if s.lease != nil {
			for _, t := range schedules {
				s.fireDue(ctx, t, now)
			}
		}
		select {
		case <-ctx.Done():
			if !function.Abandoned(ctx) {
				s.release()
			}
			return
		case <-tick.C:
		}
	}
}

// hold takes or renews the Lease; s.lease is nil when another runner
// holds it.
func (s *Schedules) hold(ctx context.Context, now time.Time) {
	leases := s.client.Leases(function.RunnerNamespace)
	cur, err := leases.Get(ctx, ScheduleLeaseName)
	stamp := api.NewMicroTime(now.UTC())
	secs := int32(function.RunnerLeaseDuration / time.Second)
	switch {
	case errdefs.IsNotFound(err):
		l := &api.Lease{ObjectMeta: api.ObjectMeta{Name: ScheduleLeaseName, Namespace: function.RunnerNamespace},
			Spec: api.LeaseSpec{HolderIdentity: &s.self, LeaseDurationSeconds: &secs, AcquireTime: stamp, RenewTime: stamp}}
		s.lease, err = leases.Create(ctx, l)
	case err != nil:
	case cur.Spec.HolderIdentity != nil && *cur.Spec.HolderIdentity == s.self, !function.LeaseLive(cur, now):
		if cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != s.self {
			cur.Spec.HolderIdentity, cur.Spec.AcquireTime = &s.self, stamp
			log.WithField("runner", s.self).Info("funcrunner: firing the schedules")
		}
		cur.Spec.RenewTime, cur.Spec.LeaseDurationSeconds = stamp, &secs
		s.lease, err = leases.Update(ctx, cur)
	default:
		s.lease = nil
		return
	}
	if err != nil {
		s.lease = nil
		if ctx.Err() == nil && !errdefs.IsConflict(err) && !errdefs.IsAlreadyExists(err) {
			log.WithError(err).Warn("funcrunner: holding the schedules' lease failed")
		}
	}
}

// release lets the Lease go, so that another runner fires at once.
func (s *Schedules) release() {
	if s.lease == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = s.client.Leases(function.RunnerNamespace).Delete(ctx, ScheduleLeaseName,
		client.DeleteOptions{ResourceVersion: s.lease.ResourceVersion})
	s.lease = nil
}

// fireDue fires the ticks of t that are due, oldest first, and marks it
// ready.
func (s *Schedules) fireDue(ctx context.Context, t *api.Trigger, now time.Time) {
	sched, err := validation.ParseSchedule(t.Spec.Schedule)
	if err != nil {
		return // validated when stored; a bad one is not fired
	}
	from := t.CreationTimestamp
	if t.Status.LastFired != nil {
		from = t.Status.LastFired
	}
	if from == nil {
		return
	}
	last := *from
	if mine, ok := s.fired[t.UID]; ok && mine.After(last) {
		last = mine
	}
	fired := 0
	for next := sched.Next(last); !next.After(now) && fired < maxCatchUp; next = sched.Next(next) {
		if err := s.fire(ctx, t, next); err != nil {
			if ctx.Err() == nil {
				log.WithError(err).WithField("trigger", t.Namespace+"/"+t.Name).Warn("funcrunner: firing a schedule failed")
			}
			break
		}
		last, fired = next, fired+1
		s.fired[t.UID] = last
	}
	if fired == 0 && t.Status.Ready && t.Status.ServedBy == s.self {
		return
	}
	next := cache.DeepCopy(t)
	stamp := last.UTC()
	next.Status = api.TriggerStatus{Ready: true, ServedBy: s.self, Message: "fired by the runner holding " + ScheduleLeaseName, LastFired: &stamp}
	if fired == 0 {
		next.Status.LastFired = t.Status.LastFired // only marking it ready
	}
	if _, err := s.client.Triggers(t.Namespace).UpdateStatus(ctx, next); err != nil && ctx.Err() == nil && !errdefs.IsConflict(err) {
		log.WithError(err).WithField("trigger", t.Namespace+"/"+t.Name).Warn("funcrunner: recording a schedule's ticks failed")
	}
}

// fire stores the call of one tick; a tick already stored is not an error.
func (s *Schedules) fire(ctx context.Context, t *api.Trigger, tick time.Time) error {
	stamp := tick.UTC().Format(time.RFC3339Nano)
	sum := sha256.Sum256([]byte(string(t.UID) + "/" + stamp))
	name := "tick-" + hex.EncodeToString(sum[:12])
	ev := &api.FuncEvent{SpecVersion: "1.0", ID: name, Source: triggerSource(t), Type: function.EventTypeSchedule,
		Time: stamp, Subject: stamp, DataContentType: "text/plain"}
	if !function.PassesFilters(t.Spec.Filters, ev) {
		return nil
	}
	inst := triggerCall(t, s.refs.ref(t), name, s.self, stamp, ev)
	_, err := s.client.FuncInstances(t.Namespace).Create(ctx, inst)
	if errdefs.IsAlreadyExists(err) {
		return nil
	}
	return err
}
