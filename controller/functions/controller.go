// Package functions is the function controller: for every Func template it
// keeps a ConfigMap with the code, and for v2 templates a Service and a
// ReplicaSet of function pods whose replicas follow the template's call
// counter. It is the only writer of the counter: it raises it from the
// demand the function runners report on their Leases (demand.go), and lets
// idle functions' counters decay toward their minimum, one step per
// interval, which is how a function scales to zero.
package functions

import (
	"context"
	"fmt"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/owner"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in the controller manager.
const Name = "functions"

// Config tunes scale to zero.
type Config struct {
	// ScaleInterval is how often idle functions' counters are lowered.
	ScaleInterval time.Duration
	// IdleWindow is how long without a call makes a function idle.
	IdleWindow time.Duration
	// Events records the functions' scale steps (nil: none).
	Events events.EventRecorder
}

// Defaults as the seed describes them.
const (
	DefaultScaleInterval = 10 * time.Second
	DefaultIdleWindow    = 60 * time.Second
)

// Controller reconciles Func templates.
type Controller struct {
	client *client.Client
	cfg    Config
	now    func() time.Time

	funcs  *cache.Informer[api.Func, *api.Func]
	rss    *cache.Informer[api.ReplicaSet, *api.ReplicaSet]
	svcs   *cache.Informer[api.Service, *api.Service]
	cms    *cache.Informer[api.ConfigMap, *api.ConfigMap]
	pods   *cache.Informer[api.Pod, *api.Pod]
	leases *cache.Informer[api.Lease, *api.Lease]
	revs   *cache.Informer[api.FuncRevision, *api.FuncRevision]
	demand *demandTracker
	queue  *workqueue.Queue
}

// New returns a function controller over the factory's informers.
func New(c *client.Client, f *cache.Factory, cfg Config) *Controller {
	if cfg.ScaleInterval <= 0 {
		cfg.ScaleInterval = DefaultScaleInterval
	}
	if cfg.IdleWindow <= 0 {
		cfg.IdleWindow = DefaultIdleWindow
	}
	ctl := &Controller{
		client: c, cfg: cfg, now: time.Now,
		funcs: f.Funcs(), rss: f.ReplicaSets(), svcs: f.Services(), cms: f.ConfigMaps(), pods: f.Pods(),
		leases: f.Leases(), revs: f.FuncRevisions(), queue: workqueue.New(),
	}
	ctl.demand = newDemandTracker(ctl.now())
	ctl.funcs.AddEventHandler(cache.Handler[*api.Func]{
		OnAdd:    func(o *api.Func) { ctl.queue.Add(cache.Key(o)) },
		OnUpdate: func(_, o *api.Func) { ctl.queue.Add(cache.Key(o)) },
		OnDelete: func(o *api.Func) { ctl.queue.Add(cache.Key(o)) },
	})
	onChange(ctl.rss, ctl.enqueueOwner)
	onChange(ctl.svcs, ctl.enqueueOwner)
	onChange(ctl.cms, ctl.enqueueOwner)
	onChange(ctl.pods, ctl.enqueueOwner)
	onChange(ctl.revs, ctl.enqueueOwner)
	// A runner's report is synced at once: a call waiting on a function at
	// zero waits for this (the cold start), not for a timer.
	ctl.leases.AddEventHandler(cache.Handler[*api.Lease]{
		OnAdd:    func(l *api.Lease) { ctl.enqueueFuncs(ctl.demand.observe(l, ctl.now())) },
		OnUpdate: func(_, l *api.Lease) { ctl.enqueueFuncs(ctl.demand.observe(l, ctl.now())) },
		OnDelete: func(l *api.Lease) { ctl.enqueueFuncs(ctl.demand.forget(l)) },
	})
	return ctl
}

// enqueueFuncs queues the functions ("ns/name") whose demand changed (a
// revision's unit, "ns/name@N", is its function's). Only known ones: a
// report may name a function deleted meanwhile, and a sync of an unknown
// key deletes its objects.
func (c *Controller) enqueueFuncs(keys []string) {
	for _, key := range keys {
		ns, name := cache.SplitKey(key)
		name = function.BaseName(name)
		if _, ok := c.funcs.Lister().Get(ns, name); ok {
			c.queue.Add(ns + "/" + name)
		}
	}
}

// onChange calls fn with every added, changed or deleted object.
func onChange[T any, PT client.Object[T]](inf *cache.Informer[T, PT], fn func(api.Object)) {
	inf.AddEventHandler(cache.Handler[PT]{
		OnAdd:    func(o PT) { fn(o) },
		OnUpdate: func(_, o PT) { fn(o) },
		OnDelete: func(o PT) { fn(o) },
	})
}

// enqueueOwner queues the function an object was made for (a fresh pod
// of one call included: its start is the Ready condition of a v1 function).
func (c *Controller) enqueueOwner(obj api.Object) {
	m := obj.GetObjectMeta()
	if fn := m.Labels[function.LabelFunc]; fn != "" {
		c.queue.Add(m.Namespace + "/" + fn)
	}
	if fn := m.Labels[function.LabelRevisionOf]; fn != "" {
		c.queue.Add(m.Namespace + "/" + fn)
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	for _, inf := range []interface{ Start(context.Context) }{c.funcs, c.rss, c.svcs, c.cms, c.pods, c.leases, c.revs} {
		inf.Start(ctx)
	}
	go c.decayLoop(ctx)
	workqueue.Run(ctx, c.queue, workers, "functions", c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	cached, ok := c.funcs.Lister().Get(ns, name)
	if !ok {
		return c.cleanup(ctx, ns, name)
	}
	if cached.DeletionTimestamp != nil {
		// Deleted in the foreground: the garbage collector removes what
		// was made for it, and nothing is made again meanwhile.
		return nil
	}
	f := cache.DeepCopy(cached)
	if err := c.syncConfigMap(ctx, f); err != nil {
		return err
	}
	written := f.Status
	revs, err := c.ensureRevision(ctx, f)
	if err != nil {
		return err
	}
	if f.APIVersion == api.FuncAPIVersionV1 {
		// v1 runs every step in a fresh pod: no pool, no Service. A warm
		// pod claimed for a step is removed by its runner at the step's
		// end; one whose runner died first, here.
		if err := c.removeStrayClaims(ctx, key, f, claimGrace+time.Duration(function.TimeoutSeconds(&f.Spec))*time.Second); err != nil {
			return err
		}
		if err := c.removePool(ctx, ns, name); err != nil {
			return err
		}
		if err := c.syncUnits(ctx, f, revs, c.now()); err != nil {
			return err
		}
		return c.syncFreshPodStatus(ctx, key, f, written)
	}
	svc, err := c.syncService(ctx, f)
	if err != nil {
		return err
	}
	// The runners' demand raises the counter before the ReplicaSet is
	// written, so a cold start costs one write before pods are made.
	now := c.now()
	demand := c.demand.snapshot(key, now)
	counter, called := nextCounter(f.Status.Counter, &f.Spec, demand)
	f.Status.Counter = counter
	if called {
		ts := now.UTC()
		f.Status.TimeStamp = &ts
	}
	rs, counter, err := c.syncReplicaSet(ctx, f)
	if err != nil {
		return err
	}
	if err := c.replaceOldPods(ctx, f); err != nil {
		return err
	}
	if err := c.removeStrayClaims(ctx, key, f, claimGrace); err != nil {
		return err
	}
	f.Status.ServiceUID, f.Status.ReplicaSetUID, f.Status.Counter = svc.UID, rs.UID, counter
	if err := c.syncUnits(ctx, f, revs, now); err != nil {
		return err
	}
	c.syncReady(f, now)
	if !cache.Equal(written, f.Status) {
		// Conditional on the version read: a decay step written meanwhile
		// makes this fail and the sync run again on the newer counter.
		if _, err := c.client.Funcs(ns).UpdateStatus(ctx, f); err != nil {
			return fmt.Errorf("func %s status: %w", key, err)
		}
		if called || counter != written.Counter {
			log.WithFields(log.Fields{"func": key, "counter": counter, "calls": demand.Started,
				"concurrent": demand.Concurrent, "waiting": demand.Waiting}).Debug("function counter written")
		}
	}
	c.demand.commit(key, demand)
	return nil
}

// syncFreshPodStatus writes the status of a function of fresh pods (v1):
// its last call, and whether its pods start; no counter, Service or
// ReplicaSet (those of a pool it had before are gone).
func (c *Controller) syncFreshPodStatus(ctx context.Context, key string, f *api.Func, written api.FuncStatus) error {
	now := c.now()
	demand := c.demand.snapshot(key, now)
	if demand.Started > 0 {
		ts := now.UTC()
		f.Status.TimeStamp = &ts
	}
	f.Status.Counter, f.Status.ServiceUID, f.Status.ReplicaSetUID = 0, "", ""
	c.syncReady(f, now)
	if !cache.Equal(written, f.Status) {
		if _, err := c.client.Funcs(f.Namespace).UpdateStatus(ctx, f); err != nil {
			return fmt.Errorf("func %s status: %w", key, err)
		}
	}
	c.demand.commit(key, demand)
	return nil
}

func (c *Controller) syncConfigMap(ctx context.Context, f *api.Func) error {
	want, err := function.CodeConfigMap(f)
	if err != nil {
		return err
	}
	cur, ok := c.cms.Lister().Get(f.Namespace, want.Name)
	if !ok {
		_, err := c.client.ConfigMaps(f.Namespace).Create(ctx, want)
		if errdefs.IsAlreadyExists(err) {
			return nil // the cache is behind; the add event brings us back
		}
		return err
	}
	if cache.Equal(cur.Data, want.Data) && cache.Equal(cur.Labels, want.Labels) {
		return nil
	}
	next := cache.DeepCopy(cur)
	next.Data, next.Labels, next.BinaryData = want.Data, want.Labels, nil
	_, err = c.client.ConfigMaps(f.Namespace).Update(ctx, next)
	return err
}

func (c *Controller) syncService(ctx context.Context, f *api.Func) (*api.Service, error) {
	name := function.ObjectName(f.Name)
	svcs := c.client.Services(f.Namespace)
	cur, ok := c.svcs.Lister().Get(f.Namespace, name)
	if ok && f.Spec.ServiceAddress != "" && cur.Spec.ClusterIP != f.Spec.ServiceAddress {
		// A cluster IP cannot change: make the Service again at the new address.
		if _, err := svcs.Delete(ctx, name, client.DeleteOptions{UID: cur.UID}); err != nil && !errdefs.IsNotFound(err) {
			return nil, err
		}
		ok = false
	}
	if !ok {
		svc := &api.Service{
			ObjectMeta: api.ObjectMeta{Name: name, Namespace: f.Namespace,
				Labels: function.Selector(f.Name), OwnerReferences: []api.OwnerReference{function.OwnerRef(f)}},
			Spec: api.ServiceSpec{Selector: function.Selector(f.Name), ClusterIP: clusterIP(f),
				Ports: []api.ServicePort{{Name: function.PortName, Port: function.ServicePort, TargetPort: function.PortName}}},
		}
		created, err := svcs.Create(ctx, svc)
		if errdefs.IsAlreadyExists(err) {
			// Made by the last sync, which the cache has not seen yet.
			created, err = svcs.Get(ctx, name)
		}
		if err != nil {
			return nil, fmt.Errorf("service of func %s: %w", f.Name, err)
		}
		cur = created
	}
	if f.Spec.ServiceAddress == "" && cur.Spec.ClusterIP != "" && !function.IsUnit(f.Name) {
		// The allocated address is written back, as the seed's serviceAddress.
		f.Spec.ServiceAddress = cur.Spec.ClusterIP
		updated, err := c.client.Funcs(f.Namespace).Update(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("writing serviceAddress of func %s: %w", f.Name, err)
		}
		*f = *updated
	}
	return cur, nil
}

// syncReplicaSet makes the pool's ReplicaSet run the current code with as
// many replicas as the counter says; it returns the counter it used.
func (c *Controller) syncReplicaSet(ctx context.Context, f *api.Func) (*api.ReplicaSet, int, error) {
	lo, initial, hi := validation.FuncBounds(&f.Spec)
	counter := f.Status.Counter
	if f.Status.ReplicaSetUID == "" {
		// A new pool starts at initInstanceNum, or higher if calls were
		// counted before it existed.
		counter = max(counter, initial)
	}
	counter = clamp(counter, lo, hi)
	replicas := int32(counter)
	name := function.ObjectName(f.Name)
	template := function.PodTemplate(f)
	rss := c.client.ReplicaSets(f.Namespace)
	cur, ok := c.rss.Lister().Get(f.Namespace, name)
	if !ok {
		rs := &api.ReplicaSet{
			ObjectMeta: api.ObjectMeta{Name: name, Namespace: f.Namespace,
				Labels: function.Selector(f.Name), OwnerReferences: []api.OwnerReference{function.OwnerRef(f)}},
			Spec: api.ReplicaSetSpec{Replicas: &replicas,
				Selector: &api.LabelSelector{MatchLabels: function.Selector(f.Name)}, Template: template},
		}
		created, err := rss.Create(ctx, rs)
		if errdefs.IsAlreadyExists(err) {
			created, err = rss.Get(ctx, name)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("replicaset of func %s: %w", f.Name, err)
		}
		return created, counter, nil
	}
	next := cache.DeepCopy(cur)
	validation.DefaultPodSpec(&template.Spec)
	changed := false
	if cur.Spec.Replicas == nil || *cur.Spec.Replicas != replicas {
		next.Spec.Replicas = &replicas
		changed = true
	}
	if !cache.Equal(cur.Spec.Template, template) {
		next.Spec.Template = template
		changed = true
	}
	if !changed {
		return cur, counter, nil
	}
	updated, err := rss.Update(ctx, next)
	if err != nil {
		return nil, 0, fmt.Errorf("replicaset of func %s: %w", f.Name, err)
	}
	log.WithFields(log.Fields{"func": f.Name, "replicas": replicas}).Info("function pool updated")
	if (cur == nil || cur.Spec.Replicas == nil || *cur.Spec.Replicas != replicas) && !function.IsUnit(f.Name) {
		events.Eventf(c.cfg.Events, f, api.EventTypeNormal, "ScalingReplicaSet", "Scaled the pool of %s to %d", f.Name, replicas)
	}
	return updated, counter, nil
}

// replaceOldPods deletes pool pods that run an older version of the code;
// the ReplicaSet replaces them with pods of the new template. They finish
// the calls they serve within their grace period.
func (c *Controller) replaceOldPods(ctx context.Context, f *api.Func) error {
	hash := function.CodeHash(&f.Spec)
	sel := labels.SelectorFromSet(function.Selector(f.Name))
	for _, p := range c.pods.Lister().ListNamespace(f.Namespace, sel) {
		if p.Labels[function.LabelInstance] != "" || p.Labels[function.LabelCode] == hash || p.DeletionTimestamp != nil {
			continue
		}
		if _, err := c.client.Pods(f.Namespace).Delete(ctx, p.Name, client.DeleteOptions{UID: p.UID}); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
		log.WithFields(log.Fields{"func": f.Name, "pod": p.Name}).Info("replacing a pod running old code")
	}
	return nil
}

// claimGrace is how long a warm pod a runner claimed for a function may
// stay without its ReplicaSet adopting it. The ReplicaSet adopts it when
// short of replicas, which the claiming call's demand makes it within a
// report; one it never adopts (the function went back to zero first, or
// the claim's runner died before the call was counted) is removed.
const claimGrace = 30 * time.Second

// removeStrayClaims deletes f's claimed warm pods that no ReplicaSet
// adopted within grace, and looks again when the youngest is due.
func (c *Controller) removeStrayClaims(ctx context.Context, key string, f *api.Func, grace time.Duration) error {
	sel := labels.SelectorFromSet(function.Selector(f.Name))
	var next time.Duration
	for _, p := range c.pods.Lister().ListNamespace(f.Namespace, sel) {
		at, claimed := p.Annotations[function.AnnotationClaimed]
		if !claimed || owner.ControllerOf(&p.ObjectMeta) != nil || p.DeletionTimestamp != nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, at)
		if age := c.now().Sub(t); err == nil && age < grace {
			if d := grace - age; next == 0 || d < next {
				next = d
			}
			continue
		}
		if _, err := c.client.Pods(f.Namespace).Delete(ctx, p.Name, client.DeleteOptions{UID: p.UID, ResourceVersion: p.ResourceVersion}); err != nil &&
			!errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
			return err
		}
		log.WithFields(log.Fields{"func": f.Name, "pod": p.Name}).Info("removing a claimed warm pod its ReplicaSet did not adopt")
	}
	if next > 0 {
		c.queue.AddAfter(key, next)
	}
	return nil
}

// removePool deletes a function's Service and ReplicaSet (a v1 template, or
// a deleted one).
func (c *Controller) removePool(ctx context.Context, ns, fn string) error {
	name := function.ObjectName(fn)
	if _, ok := c.rss.Lister().Get(ns, name); ok {
		if _, err := c.client.ReplicaSets(ns).Delete(ctx, name, client.DeleteOptions{}); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
	}
	if _, ok := c.svcs.Lister().Get(ns, name); ok {
		if _, err := c.client.Services(ns).Delete(ctx, name, client.DeleteOptions{}); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// cleanup deletes all a deleted function had; the ReplicaSet's pods go with
// it through garbage collection, and here too in case none runs.
func (c *Controller) cleanup(ctx context.Context, ns, fn string) error {
	if err := c.removePool(ctx, ns, fn); err != nil {
		return err
	}
	name := function.ObjectName(fn)
	if _, ok := c.cms.Lister().Get(ns, name); ok {
		if _, err := c.client.ConfigMaps(ns).Delete(ctx, name, client.DeleteOptions{}); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
	}
	sel := labels.SelectorFromSet(function.Selector(fn))
	for _, p := range c.pods.Lister().ListNamespace(ns, sel) {
		if p.Labels[function.LabelInstance] != "" || p.DeletionTimestamp != nil {
			continue
		}
		if _, err := c.client.Pods(ns).Delete(ctx, p.Name, client.DeleteOptions{UID: p.UID}); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// clusterIP is the address a function's Service asks for: the function's
// own; none for a revision's unit, which only the runners reach, by its
// Endpoints.
func clusterIP(f *api.Func) string {
	if function.IsUnit(f.Name) {
		return "None"
	}
	return f.Spec.ServiceAddress
}

func clamp(v, lo, hi int) int {
	return max(lo, min(v, hi))
}
