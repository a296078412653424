// Package deployment rolls Deployments out: one ReplicaSet per version of
// the pod template (named and labelled by its pod-template-hash, with a
// revision), the new one scaled up and the old ones down within maxSurge
// and maxUnavailable as pods become available (RollingUpdate), or all old
// pods gone first (Recreate); old ReplicaSets beyond revisionHistoryLimit
// deleted; the status and conditions kubectl rollout reads.
package deployment

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/owner"
	"minik8s/pkg/rollout"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "deployment"

// API is what the controller writes.
type API interface {
	GetReplicaSet(ctx context.Context, namespace, name string) (*api.ReplicaSet, error)
	CreateReplicaSet(ctx context.Context, rs *api.ReplicaSet) (*api.ReplicaSet, error)
	UpdateReplicaSet(ctx context.Context, rs *api.ReplicaSet) (*api.ReplicaSet, error)
	DeleteReplicaSet(ctx context.Context, namespace, name, uid string) error
	UpdateDeploymentStatus(ctx context.Context, d *api.Deployment) (*api.Deployment, error)
}

var _ API = clientAPI{}

type clientAPI struct{ c *client.Client }

func (a clientAPI) GetReplicaSet(ctx context.Context, ns, name string) (*api.ReplicaSet, error) {
	return a.c.ReplicaSets(ns).Get(ctx, name)
}

func (a clientAPI) CreateReplicaSet(ctx context.Context, rs *api.ReplicaSet) (*api.ReplicaSet, error) {
	return a.c.ReplicaSets(rs.Namespace).Create(ctx, rs)
}

func (a clientAPI) UpdateReplicaSet(ctx context.Context, rs *api.ReplicaSet) (*api.ReplicaSet, error) {
	return a.c.ReplicaSets(rs.Namespace).Update(ctx, rs)
}

func (a clientAPI) DeleteReplicaSet(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.ReplicaSets(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

func (a clientAPI) UpdateDeploymentStatus(ctx context.Context, d *api.Deployment) (*api.Deployment, error) {
	return a.c.Deployments(d.Namespace).UpdateStatus(ctx, d)
}

// Controller is the Deployment controller.
type Controller struct {
	api    API
	deps   *cache.Lister[api.Deployment, *api.Deployment]
	rss    *cache.Lister[api.ReplicaSet, *api.ReplicaSet]
	queue  *workqueue.Queue
	events events.EventRecorder
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory, rec events.EventRecorder) *Controller {
	depInf, rsInf := f.Deployments(), f.ReplicaSets()
	dc := &Controller{api: clientAPI{c}, deps: depInf.Lister(), rss: rsInf.Lister(), queue: workqueue.New(), events: rec}
	enqueue := func(d *api.Deployment) { dc.queue.Add(cache.Key(d)) }
	depInf.AddEventHandler(cache.Handler[*api.Deployment]{
		OnAdd: enqueue, OnUpdate: func(_, d *api.Deployment) { enqueue(d) }, OnDelete: enqueue,
	})
	rsInf.AddEventHandler(cache.ControllerHandler[*api.ReplicaSet](api.DeploymentsResource.Kind, dc.queue.Add))
	return dc
}

// Run works the queue until ctx ends.
func (dc *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, dc.queue, workers, Name, dc.sync)
}

func (dc *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	cached, ok := dc.deps.Get(ns, name)
	if !ok || cached.DeletionTimestamp != nil {
		return nil // the garbage collector removes its ReplicaSets
	}
	d := cache.DeepCopy(cached)
	var owned []*api.ReplicaSet
	for _, rs := range dc.rss.ListNamespace(ns, nil) {
		if owner.IsControlledBy(&rs.ObjectMeta, d.UID) {
			owned = append(owned, rs)
		}
	}
	// The new ReplicaSet is the one whose template is the Deployment's
	// (the oldest, if several), as Kubernetes' FindNewReplicaSet: its label
	// alone proves nothing, as whoever may write ReplicaSets may set it
	// (and an owner reference) on one running other pods, which would then
	// be scaled up as this Deployment's.
	want := templateKey(d.Spec.Template)
	var newRS *rsState
	var olds []*rsState
	maxRevision := int64(0)
	for _, rs := range owned {
		if templateKey(rs.Spec.Template) == want && (newRS == nil || rs.CreationTimestamp.Before(*newRS.rs.CreationTimestamp)) {
			if newRS != nil {
				olds = append(olds, newRS)
				maxRevision = max(maxRevision, rollout.Revision(newRS.rs))
			}
			newRS = stateOf(rs)
			continue
		}
		olds = append(olds, stateOf(rs))
		maxRevision = max(maxRevision, rollout.Revision(rs))
	}
	desired := rollout.Replicas(d)
	surge, unavailable, err := rollout.Bounds(d, desired)
	if err != nil {
		return nil // validation refuses such a Deployment; nothing to do
	}
	if d.Spec.Strategy.Type == api.DeploymentRecreate {
		surge, unavailable = 0, desired
	}
	if d.Spec.Paused {
		return dc.syncStatus(ctx, d, newRS, olds, unavailable)
	}
	if newRS == nil {
		rs, err := dc.createNewRS(ctx, d, maxRevision+1, desired+surge)
		if err != nil {
			return err
		}
		newRS = stateOf(rs)
	}
	switch d.Spec.Strategy.Type {
	case api.DeploymentRecreate:
		planRecreate(newRS, olds, desired)
	default:
		planRolling(newRS, olds, desired, surge, unavailable)
	}
	if err := dc.apply(ctx, d, newRS, olds, maxRevision, desired+surge); err != nil {
		return err
	}
	if err := dc.cleanup(ctx, d, olds); err != nil {
		return err
	}
	return dc.syncStatus(ctx, d, newRS, olds, unavailable)
}

// templateKey identifies a pod template as the apiserver stores it: the
// template hash (its pod-template-hash label aside) after the defaults a
// ReplicaSet's template gets, so that a template stored before a default
// was added matches its Deployment's.
func templateKey(t api.PodTemplateSpec) string {
	rs := &api.ReplicaSet{Spec: api.ReplicaSetSpec{Template: t}}
	rs = cache.DeepCopy(rs)
	validation.Default(api.ReplicaSetsResource, rs)
	return rollout.TemplateHash(rs.Spec.Template)
}

// createNewRS makes the ReplicaSet of the Deployment's current template,
// empty: the plan scales it. A ReplicaSet of its name holding another
// template is a collision: status.collisionCount goes up, and with it the
// hash and the name, as in Kubernetes.
func (dc *Controller) createNewRS(ctx context.Context, d *api.Deployment, revision int64, maxReplicas int) (*api.ReplicaSet, error) {
	hash := rollout.Hash(d)
	zero := int32(0)
	// d is the sync's own copy: its template and selector are ours to
	// take, their label maps cloned.
	tmpl := d.Spec.Template
	tmpl.Labels = maps.Clone(tmpl.Labels)
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[api.LabelPodTemplateHash] = hash
	sel := *d.Spec.Selector
	sel.MatchLabels = maps.Clone(sel.MatchLabels)
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[api.LabelPodTemplateHash] = hash
	rs := &api.ReplicaSet{
		ObjectMeta: api.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: tmpl.Labels,
			Annotations:     dc.rsAnnotations(d, nil, revision, maxReplicas),
			OwnerReferences: []api.OwnerReference{owner.ControllerRef(api.DeploymentsResource, d)},
		},
		Spec: api.ReplicaSetSpec{Replicas: &zero, Selector: &sel, Template: tmpl, MinReadySeconds: d.Spec.MinReadySeconds},
	}
	created, err := dc.api.CreateReplicaSet(ctx, rs)
	if errdefs.IsAlreadyExists(err) {
		return dc.collided(ctx, d, rs.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("creating replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	log.WithFields(log.Fields{"deployment": cache.Key(d), "replicaset": created.Name, "revision": revision}).Info("new replicaset")
	return created, nil
}

// collided handles a new ReplicaSet's name already taken: by the
// Deployment's own for its template (the cache was behind), which is
// then the new one; by anything else, a collision.
func (dc *Controller) collided(ctx context.Context, d *api.Deployment, name string) (*api.ReplicaSet, error) {
	cur, err := dc.api.GetReplicaSet(ctx, d.Namespace, name)
	if err != nil {
		return nil, fmt.Errorf("reading replicaset %s/%s: %w", d.Namespace, name, err)
	}
	if owner.IsControlledBy(&cur.ObjectMeta, d.UID) && templateKey(cur.Spec.Template) == templateKey(d.Spec.Template) {
		return cur, nil
	}
	n := int32(1)
	if c := d.Status.CollisionCount; c != nil {
		n = *c + 1
	}
	d.Status.CollisionCount = &n
	if _, err := dc.api.UpdateDeploymentStatus(ctx, d); err != nil {
		return nil, fmt.Errorf("counting a collision of deployment %s: %w", cache.Key(d), err)
	}
	return nil, fmt.Errorf("replicaset %s/%s holds another template: collision %d, a new name next: %w", d.Namespace, name, n, errdefs.ErrConflict)
}

// rsAnnotations are a ReplicaSet's annotations for the Deployment: its
// revision, the desired and most replicas, the change cause.
func (dc *Controller) rsAnnotations(d *api.Deployment, cur map[string]string, revision int64, maxReplicas int) map[string]string {
	a := maps.Clone(cur)
	if a == nil {
		a = map[string]string{}
	}
	a[api.AnnotationRevision] = strconv.FormatInt(revision, 10)
	a[api.AnnotationDesiredReplicas] = strconv.Itoa(rollout.Replicas(d))
	a[api.AnnotationMaxReplicas] = strconv.Itoa(maxReplicas)
	if cause, ok := d.Annotations[api.AnnotationChangeCause]; ok {
		a[api.AnnotationChangeCause] = cause
	}
	return a
}

// apply writes the planned replica counts; the new ReplicaSet also gets
// the newest revision (a rollback makes an old template new again) and
// the Deployment's minReadySeconds.
func (dc *Controller) apply(ctx context.Context, d *api.Deployment, newRS *rsState, olds []*rsState, maxRevision int64, maxReplicas int) error {
	revision := max(rollout.Revision(newRS.rs), 1)
	if revision <= maxRevision {
		revision = maxRevision + 1
	}
	annotations := dc.rsAnnotations(d, newRS.rs.Annotations, revision, maxReplicas)
	changed := !maps.Equal(annotations, newRS.rs.Annotations) || newRS.rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds
	if err := dc.scale(ctx, d, newRS, changed, func(rs *api.ReplicaSet) {
		rs.Annotations, rs.Spec.MinReadySeconds = annotations, d.Spec.MinReadySeconds
	}); err != nil {
		return err
	}
	for _, o := range olds {
		if err := dc.scale(ctx, d, o, false, nil); err != nil {
			return err
		}
	}
	return nil
}

// scale writes a ReplicaSet's planned replicas (and what edit changes)
// when they differ from its spec.
func (dc *Controller) scale(ctx context.Context, d *api.Deployment, s *rsState, changed bool, edit func(*api.ReplicaSet)) error {
	from := int32(0)
	if s.rs.Spec.Replicas != nil {
		from = *s.rs.Spec.Replicas
	}
	to := int32(s.replicas)
	if from == to && !changed {
		return nil
	}
	rs := cache.DeepCopy(s.rs)
	rs.Spec.Replicas = &to
	if edit != nil {
		edit(rs)
	}
	updated, err := dc.api.UpdateReplicaSet(ctx, rs)
	if err != nil {
		return fmt.Errorf("scaling replicaset %s/%s to %d: %w", rs.Namespace, rs.Name, to, err)
	}
	s.rs = updated
	switch {
	case to > from:
		events.Eventf(dc.events, d, api.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from %d to %d", rs.Name, from, to)
	case to < from:
		events.Eventf(dc.events, d, api.EventTypeNormal, "ScalingReplicaSet", "Scaled down replica set %s from %d to %d", rs.Name, from, to)
	}
	return nil
}

// cleanup deletes the old ReplicaSets beyond revisionHistoryLimit that
// have nothing left, oldest first.
func (dc *Controller) cleanup(ctx context.Context, d *api.Deployment, olds []*rsState) error {
	limit := rollout.DefaultRevisionHistoryLimit
	if d.Spec.RevisionHistoryLimit != nil {
		limit = int(*d.Spec.RevisionHistoryLimit)
	}
	byRevision(olds)
	var errs []error
	for i, o := range olds {
		if len(olds)-i <= limit {
			break
		}
		if o.replicas != 0 || o.current != 0 || o.rs.DeletionTimestamp != nil {
			continue
		}
		err := dc.api.DeleteReplicaSet(ctx, o.rs.Namespace, o.rs.Name, o.rs.UID)
		if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting old replicaset %s: %w", o.rs.Name, err))
		}
	}
	return errors.Join(errs...)
}
