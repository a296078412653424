package functions

import (
	"context"
	"fmt"
	"slices"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/owner"
)

// Revisions: every version of a function's code and config is a
// FuncRevision, numbered from 1, made here (their one writer). The latest
// (f.Status.Revision) is served by the function's own pool; an older one
// that gets calls (spec.traffic, or calls naming NAME@N) by a unit of its
// own (function.Unit), whose counter lives in the revision's status and
// follows the same rules as a function's: raised by the runners' demand,
// lowered one step per interval once idle, down to zero.

// revisionsOf are f's revisions (made for this f, not an older function
// of its name), by number.
func (c *Controller) revisionsOf(f *api.Func) []*api.FuncRevision {
	sel := labels.SelectorFromSet(map[string]string{function.LabelFunc: f.Name})
	var out []*api.FuncRevision
	for _, r := range c.revs.Lister().ListNamespace(f.Namespace, sel) {
		if ref := owner.ControllerOf(&r.ObjectMeta); r.Spec.Function == f.Name && ref != nil && ref.UID == f.UID {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *api.FuncRevision) int { return int(a.Spec.Revision - b.Spec.Revision) })
	return out
}

// ensureRevision sets f.Status.Revision to the revision f's spec is,
// making it when none is yet; it returns f's revisions, that one included.
func (c *Controller) ensureRevision(ctx context.Context, f *api.Func) ([]*api.FuncRevision, error) {
	revs := c.revisionsOf(f)
	hash := function.RevisionHash(&f.Spec)
	made := f.Status.RevisionsMade
	var cur *api.FuncRevision
	for _, r := range revs {
		made = max(made, r.Spec.Revision)
		if r.Labels[function.LabelRevisionHash] == hash {
			cur = r
		}
	}
	f.Status.RevisionsMade = made
	if cur != nil {
		f.Status.Revision = cur.Spec.Revision
		return revs, nil
	}
	n := made + 1
	r := &api.FuncRevision{
		TypeMeta: api.TypeMeta{APIVersion: api.FuncRevisionsResource.GroupVersion(), Kind: api.FuncRevisionsResource.Kind},
		ObjectMeta: api.ObjectMeta{Name: function.RevisionName(f.Name, n), Namespace: f.Namespace,
			Labels:          map[string]string{function.LabelFunc: f.Name, function.LabelRevisionHash: hash},
			OwnerReferences: []api.OwnerReference{function.OwnerRef(f)}},
		Spec: api.FuncRevisionSpec{Function: f.Name, Revision: n, Template: function.RevisionTemplate(&f.Spec)},
	}
	created, err := c.client.FuncRevisions(f.Namespace).Create(ctx, r)
	if errdefs.IsAlreadyExists(err) {
		// The cache is behind the last sync, which made it.
		if got, gerr := c.client.FuncRevisions(f.Namespace).Get(ctx, r.Name); gerr == nil && got.Labels[function.LabelRevisionHash] == hash &&
			owner.ControllerOf(&got.ObjectMeta) != nil && owner.ControllerOf(&got.ObjectMeta).UID == f.UID {
			f.Status.Revision, f.Status.RevisionsMade = n, n
			return append(revs, got), nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("revision %d of func %s/%s: %w", n, f.Namespace, f.Name, err)
	}
	f.Status.Revision, f.Status.RevisionsMade = n, n
	log.WithFields(log.Fields{"func": cache.Key(f), "revision": n}).Info("function revision made")
	events.Eventf(c.cfg.Events, f, api.EventTypeNormal, "RevisionCreated", "Revision %d of %s", n, f.Name)
	return append(revs, created), nil
}

// syncUnits gives each older revision of f that gets calls a pool of its
// own, sized by its counter, and removes the pools of the others; then
// it removes the revisions past the history that serve nothing.
func (c *Controller) syncUnits(ctx context.Context, f *api.Func, revs []*api.FuncRevision, now time.Time) error {
	for _, r := range revs {
		if err := c.syncUnit(ctx, f, r, now); err != nil {
			return err
		}
	}
	return c.pruneRevisions(ctx, f, revs)
}

// unit is revision r's unit with its pool's state, r's status.
func unit(f *api.Func, r *api.FuncRevision) *api.Func {
	u := function.Unit(f, r)
	u.Status = api.FuncStatus{ReplicaSetUID: r.Status.ReplicaSetUID, Counter: r.Status.Counter, TimeStamp: r.Status.TimeStamp,
		Revision: r.Spec.Revision}
	return u
}

func (c *Controller) syncUnit(ctx context.Context, f *api.Func, r *api.FuncRevision, now time.Time) error {
	u := unit(f, r)
	key := cache.Key(u)
	demand := c.demand.snapshot(key, now)
	st := r.Status
	older := r.Spec.Revision != f.Status.Revision && f.APIVersion != api.FuncAPIVersionV1
	counter, called := nextCounter(r.Status.Counter, &u.Spec, demand)
	if called {
		ts := now.UTC()
		st.TimeStamp = &ts
	}
	if !older || (counter == 0 && function.TrafficPercent(f, r.Spec.Revision) == 0) {
		// The latest is the function's own pool's; an older one at zero
		// without traffic keeps nothing (a call naming it makes it again).
		if err := c.removeUnit(ctx, u); err != nil {
			return err
		}
		st.Counter, st.ReplicaSetUID = 0, ""
	} else {
		u.Status.Counter = counter
		if err := c.syncConfigMap(ctx, u); err != nil {
			return err
		}
		if _, err := c.syncService(ctx, u); err != nil {
			return err
		}
		rs, n, err := c.syncReplicaSet(ctx, u)
		if err != nil {
			return err
		}
		st.Counter, st.ReplicaSetUID = n, rs.UID
	}
	if !cache.Equal(st, r.Status) {
		next := cache.DeepCopy(r)
		next.Status = st
		if _, err := c.client.FuncRevisions(r.Namespace).UpdateStatus(ctx, next); err != nil {
			return fmt.Errorf("revision %s status: %w", cache.Key(r), err)
		}
	}
	c.demand.commit(key, demand)
	return nil
}

// removeUnit deletes a unit's ConfigMap, Service and ReplicaSet (its pods
// go with the ReplicaSet).
func (c *Controller) removeUnit(ctx context.Context, u *api.Func) error {
	if err := c.removePool(ctx, u.Namespace, u.Name); err != nil {
		return err
	}
	name := function.ObjectName(u.Name)
	if _, ok := c.cms.Lister().Get(u.Namespace, name); ok {
		if _, err := c.client.ConfigMaps(u.Namespace).Delete(ctx, name, client.DeleteOptions{}); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// pruneRevisions removes f's revisions past the newest RevisionHistory
// that serve nothing: not the latest, not in the traffic, no pods.
func (c *Controller) pruneRevisions(ctx context.Context, f *api.Func, revs []*api.FuncRevision) error {
	for i, r := range revs {
		if len(revs)-i <= function.RevisionHistory || r.Spec.Revision == f.Status.Revision ||
			function.TrafficPercent(f, r.Spec.Revision) > 0 || r.Status.Counter > 0 || r.Status.ReplicaSetUID != "" {
			continue
		}
		if _, err := c.client.FuncRevisions(r.Namespace).Delete(ctx, r.Name, client.DeleteOptions{UID: r.UID}); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
		log.WithFields(log.Fields{"func": cache.Key(f), "revision": r.Spec.Revision}).Info("old function revision removed")
	}
	return nil
}

// decayUnits lowers the counters of idle older revisions one step, as
// decay does a function's.
func (c *Controller) decayUnits(ctx context.Context) {
	for _, r := range c.revs.Lister().List(nil) {
		if r.Status.Counter == 0 {
			continue
		}
		f, ok := c.funcs.Lister().Get(r.Namespace, r.Spec.Function)
		if !ok {
			continue
		}
		u := unit(f, r)
		rs, _ := c.rss.Lister().Get(u.Namespace, function.ObjectName(u.Name))
		now := c.now()
		demand := c.demand.snapshot(cache.Key(u), now)
		if demand.Started > 0 {
			continue
		}
		next, ok := decayStep(u, rs, now, c.cfg.IdleWindow, demand.floor(&u.Spec))
		if !ok {
			continue
		}
		nr := cache.DeepCopy(r)
		nr.Status.Counter = next
		if _, err := c.client.FuncRevisions(r.Namespace).UpdateStatus(ctx, nr); err != nil {
			log.WithError(err).WithField("revision", cache.Key(r)).Debug("counter decay: will retry next interval")
			continue
		}
		log.WithFields(log.Fields{"func": cache.Key(f), "revision": r.Spec.Revision, "counter": next}).Info("idle revision scaled down one step")
	}
}
