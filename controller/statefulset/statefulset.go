// Package statefulset runs each StatefulSet's pods as Kubernetes'
// StatefulSet controller does: pods of stable names (SET-ORDINAL), host
// names under the set's headless Service, claims of their own made from
// the set's templates (kept after the pods by default; else owned by the
// set or the pod scaled away, for the garbage collector), made and removed
// in order (OrderedReady) or all at once (Parallel), replaced from the
// highest ordinal down to the partition on a rolling update; each
// template recorded as a ControllerRevision.
package statefulset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/labels"
	"minik8s/pkg/owner"
	"minik8s/pkg/rollout"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "statefulset"

var labelsAll = labels.Selector{}

// API is what the controller writes.
type API interface {
	CreatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error)
	DeletePod(ctx context.Context, namespace, name, uid string) error
	GetStatefulSet(ctx context.Context, namespace, name string) (*api.StatefulSet, error)
	UpdateStatefulSetStatus(ctx context.Context, s *api.StatefulSet) (*api.StatefulSet, error)
	CreateRevision(ctx context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error)
	GetRevision(ctx context.Context, namespace, name string) (*api.ControllerRevision, error)
	UpdateRevision(ctx context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error)
	DeleteRevision(ctx context.Context, namespace, name, uid string) error
	GetClaim(ctx context.Context, namespace, name string) (*api.PersistentVolumeClaim, error)
	CreateClaim(ctx context.Context, c *api.PersistentVolumeClaim) (*api.PersistentVolumeClaim, error)
	UpdateClaim(ctx context.Context, c *api.PersistentVolumeClaim) (*api.PersistentVolumeClaim, error)
}

type clientAPI struct{ c *client.Client }

func (a clientAPI) CreatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error) {
	return a.c.Pods(pod.Namespace).Create(ctx, pod)
}

func (a clientAPI) DeletePod(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.Pods(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

func (a clientAPI) GetStatefulSet(ctx context.Context, ns, name string) (*api.StatefulSet, error) {
	return a.c.StatefulSets(ns).Get(ctx, name)
}

func (a clientAPI) UpdateStatefulSetStatus(ctx context.Context, s *api.StatefulSet) (*api.StatefulSet, error) {
	return a.c.StatefulSets(s.Namespace).UpdateStatus(ctx, s)
}

func (a clientAPI) CreateRevision(ctx context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error) {
	return a.c.ControllerRevisions(r.Namespace).Create(ctx, r)
}

func (a clientAPI) GetRevision(ctx context.Context, ns, name string) (*api.ControllerRevision, error) {
	return a.c.ControllerRevisions(ns).Get(ctx, name)
}

func (a clientAPI) UpdateRevision(ctx context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error) {
	return a.c.ControllerRevisions(r.Namespace).Update(ctx, r)
}

func (a clientAPI) DeleteRevision(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.ControllerRevisions(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

func (a clientAPI) GetClaim(ctx context.Context, ns, name string) (*api.PersistentVolumeClaim, error) {
	return a.c.PersistentVolumeClaims(ns).Get(ctx, name)
}

func (a clientAPI) CreateClaim(ctx context.Context, c *api.PersistentVolumeClaim) (*api.PersistentVolumeClaim, error) {
	return a.c.PersistentVolumeClaims(c.Namespace).Create(ctx, c)
}

func (a clientAPI) UpdateClaim(ctx context.Context, c *api.PersistentVolumeClaim) (*api.PersistentVolumeClaim, error) {
	return a.c.PersistentVolumeClaims(c.Namespace).Update(ctx, c)
}

// Controller is the StatefulSet controller.
type Controller struct {
	api    API
	sets   *cache.Lister[api.StatefulSet, *api.StatefulSet]
	pods   *cache.Lister[api.Pod, *api.Pod]
	revs   *cache.Lister[api.ControllerRevision, *api.ControllerRevision]
	claims *cache.Lister[api.PersistentVolumeClaim, *api.PersistentVolumeClaim]
	queue  *workqueue.Queue
	events events.EventRecorder
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory, rec events.EventRecorder) *Controller {
	setInf, podInf, revInf := f.StatefulSets(), f.Pods(), f.ControllerRevisions()
	sc := &Controller{api: clientAPI{c}, sets: setInf.Lister(), pods: podInf.Lister(), revs: revInf.Lister(),
		claims: f.PersistentVolumeClaims().Lister(), queue: workqueue.New(), events: rec}
	setInf.AddEventHandler(cache.Handler[*api.StatefulSet]{
		OnAdd:    func(s *api.StatefulSet) { sc.queue.Add(cache.Key(s)) },
		OnUpdate: func(_, s *api.StatefulSet) { sc.queue.Add(cache.Key(s)) },
		OnDelete: func(s *api.StatefulSet) { sc.queue.Add(cache.Key(s)) },
	})
	enqueue := func(p *api.Pod) {
		if key, ok := owner.ControllerKey(&p.ObjectMeta, api.StatefulSetsResource.Kind); ok {
			sc.queue.Add(key)
		}
	}
	podInf.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd:    enqueue,
		OnUpdate: func(_, p *api.Pod) { enqueue(p) },
		OnDelete: enqueue,
	})
	return sc
}

// Run syncs StatefulSets until ctx ends.
func (sc *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, sc.queue, workers, Name, sc.sync)
}

func (sc *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	set, ok := sc.sets.Get(ns, name)
	if !ok {
		return nil
	}
	sel, err := labels.FromLabelSelector(set.Spec.Selector)
	if err != nil || sel.Empty() {
		log.WithError(err).WithField("statefulset", key).Warn("invalid selector")
		return nil
	}
	var pods []*api.Pod
	for _, p := range sc.pods.ListNamespace(ns, sel) {
		if owner.IsControlledBy(&p.ObjectMeta, set.UID) {
			pods = append(pods, p)
		}
	}
	h := sc.history(set)
	revs := h.Revisions(sc.revs.ListNamespace(ns, labelsAll))
	hash, err := h.Current(ctx, revs)
	if err != nil {
		return err
	}
	update := rollout.RevisionName(set.Name, hash)
	// The current revision is the one the pods below the rollout run:
	// the status's while it is still recorded, else the update's.
	current, currentTmpl := update, set.Spec.Template
	for _, r := range revs {
		if r.Name == set.Status.CurrentRevision && r.Name != update {
			if t, err := rollout.TemplateOf(r); err == nil {
				current, currentTmpl = r.Name, t
			}
		}
	}
	v := newView(set, current, update, pods, time.Now())
	var pl plan
	var actErr error
	// A set being deleted makes no more pods.
	if set.DeletionTimestamp == nil {
		pl = v.manage()
		// The claims' owners first: a pod scaled away is deleted only
		// once its claims are its own, if its claims go with it.
		actErr = sc.retainClaims(ctx, set, v)
		if actErr == nil {
			actErr = sc.act(ctx, set, v, currentTmpl, pl)
		}
		if actErr == nil {
			actErr = h.Prune(ctx, revs, pods, current, update)
		}
	}
	st := v.status(&pl)
	if pl.recheck > 0 {
		sc.queue.AddAfter(key, pl.recheck)
	}
	return errors.Join(actErr, sc.updateStatus(ctx, set, st))
}

// act makes the plan's pods (their claims first) and deletes its pods.
func (sc *Controller) act(ctx context.Context, set *api.StatefulSet, v *view, currentTmpl api.PodTemplateSpec, pl plan) error {
	var errs []error
	for _, c := range pl.create {
		tmpl, rev := currentTmpl, v.current
		if c.update {
			tmpl, rev = set.Spec.Template, v.updated
		}
		if err := sc.ensureClaims(ctx, set, c.ordinal); err != nil {
			errs = append(errs, err)
			continue
		}
		pod := newPod(set, tmpl, rev, c.ordinal)
		if _, err := sc.api.CreatePod(ctx, pod); err != nil && !errdefs.IsAlreadyExists(err) {
			events.Eventf(sc.events, set, api.EventTypeWarning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %v", pod.Name, set.Name, err)
			errs = append(errs, fmt.Errorf("creating pod %s: %w", pod.Name, err))
			continue
		}
		events.Eventf(sc.events, set, api.EventTypeNormal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", pod.Name, set.Name)
	}
	for _, p := range pl.delete {
		err := sc.api.DeletePod(ctx, p.Namespace, p.Name, p.UID)
		if err != nil && !errdefs.IsNotFound(err) {
			events.Eventf(sc.events, set, api.EventTypeWarning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %v", p.Name, set.Name, err)
			errs = append(errs, fmt.Errorf("deleting pod %s: %w", p.Name, err))
			continue
		}
		events.Eventf(sc.events, set, api.EventTypeNormal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", p.Name, set.Name)
	}
	if len(pl.create)+len(pl.delete) > 0 {
		log.WithFields(log.Fields{"statefulset": cache.Key(set), "create": len(pl.create), "delete": len(pl.delete)}).Info("syncing stateful pods")
	}
	return errors.Join(errs...)
}

func (sc *Controller) updateStatus(ctx context.Context, set *api.StatefulSet, st api.StatefulSetStatus) error {
	if reflect.DeepEqual(st, set.Status) {
		return nil
	}
	up := cache.DeepCopy(set)
	up.Status = st
	_, err := sc.api.UpdateStatefulSetStatus(ctx, up)
	if errdefs.IsConflict(err) {
		cur, gerr := sc.api.GetStatefulSet(ctx, set.Namespace, set.Name)
		if gerr != nil {
			err = gerr
		} else {
			st.CollisionCount = cur.Status.CollisionCount
			cur.Status = st
			_, err = sc.api.UpdateStatefulSetStatus(ctx, cur)
		}
	}
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating status of statefulset %s: %w", cache.Key(set), err)
	}
	return nil
}
