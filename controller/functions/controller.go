// Package functions is the function controller: for every Func template it
// keeps a ConfigMap with the code, and for v2 templates a Service and a
// ReplicaSet of function pods whose replicas follow the template's call
// counter. It also lets idle functions' counters decay toward their minimum,
// one step per interval, which is how a function scales to zero.
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
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/wait"
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

	funcs *cache.Informer[api.Func, *api.Func]
	rss   *cache.Informer[api.ReplicaSet, *api.ReplicaSet]
	svcs  *cache.Informer[api.Service, *api.Service]
	cms   *cache.Informer[api.ConfigMap, *api.ConfigMap]
	pods  *cache.Informer[api.Pod, *api.Pod]
	queue *workqueue.Queue
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
		queue: workqueue.New(),
	}
	ctl.funcs.AddEventHandler(cache.Handler[*api.Func]{
		OnAdd:    func(o *api.Func) { ctl.queue.Add(cache.Key(o)) },
		OnUpdate: func(_, o *api.Func) { ctl.queue.Add(cache.Key(o)) },
		OnDelete: func(o *api.Func) { ctl.queue.Add(cache.Key(o)) },
	})
	onChange(ctl.rss, ctl.enqueueOwner)
	onChange(ctl.svcs, ctl.enqueueOwner)
	onChange(ctl.cms, ctl.enqueueOwner)
	onChange(ctl.pods, ctl.enqueueOwner)
	return ctl
}

// onChange calls fn with every added, changed or deleted object.
func onChange[T any, PT client.Object[T]](inf *cache.Informer[T, PT], fn func(api.Object)) {
	inf.AddEventHandler(cache.Handler[PT]{
		OnAdd:    func(o PT) { fn(o) },
		OnUpdate: func(_, o PT) { fn(o) },
		OnDelete: func(o PT) { fn(o) },
	})
}

// enqueueOwner queues the function an object was made for.
func (c *Controller) enqueueOwner(obj api.Object) {
	m := obj.GetObjectMeta()
	if fn := m.Labels[function.LabelFunc]; fn != "" && m.Labels[function.LabelInstance] == "" {
		c.queue.Add(m.Namespace + "/" + fn)
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	for _, inf := range []interface{ Start(context.Context) }{c.funcs, c.rss, c.svcs, c.cms, c.pods} {
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
	f := cache.DeepCopy(cached)
	if err := c.syncConfigMap(ctx, f); err != nil {
		return err
	}
	if f.APIVersion == api.FuncAPIVersionV1 {
		// v1 runs every step in a fresh pod: no pool, no Service.
		return c.removePool(ctx, ns, name)
	}
	svc, err := c.syncService(ctx, f)
	if err != nil {
		return err
	}
	rs, counter, err := c.syncReplicaSet(ctx, f)
	if err != nil {
		return err
	}
	if err := c.replaceOldPods(ctx, f); err != nil {
		return err
	}
	st := f.Status
	st.ServiceUID, st.ReplicaSetUID, st.Counter = svc.UID, rs.UID, counter
	if !cache.Equal(st, f.Status) {
		f.Status = st
		if _, err := c.client.Funcs(ns).UpdateStatus(ctx, f); err != nil {
			return fmt.Errorf("func %s status: %w", key, err)
		}
	}
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
				Labels: map[string]string{function.LabelFunc: f.Name}, OwnerReferences: []api.OwnerReference{function.OwnerRef(f)}},
			Spec: api.ServiceSpec{Selector: function.Selector(f.Name), ClusterIP: f.Spec.ServiceAddress,
				Ports: []api.ServicePort{{Name: function.PortName, Port: function.ServicePort, TargetPort: function.PortName}}},
		}
		created, err := svcs.Create(ctx, svc)
		if err != nil {
			return nil, fmt.Errorf("service of func %s: %w", f.Name, err)
		}
		cur = created
	}
	if f.Spec.ServiceAddress == "" && cur.Spec.ClusterIP != "" {
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
				Labels: map[string]string{function.LabelFunc: f.Name}, OwnerReferences: []api.OwnerReference{function.OwnerRef(f)}},
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

// decayLoop lowers the counter of every idle function by one per interval,
// never below its minimum; the ReplicaSet follows on the next sync.
func (c *Controller) decayLoop(ctx context.Context) {
	wait.Every(ctx, c.cfg.ScaleInterval, func() {
		for _, f := range c.funcs.Lister().List(nil) {
			if err := c.decay(ctx, f); err != nil && ctx.Err() == nil {
				log.WithError(err).WithField("func", f.Name).Debug("counter decay: will retry next interval")
			}
		}
	})
}

func (c *Controller) decay(ctx context.Context, cached *api.Func) error {
	rs, _ := c.rss.Lister().Get(cached.Namespace, function.ObjectName(cached.Name))
	next, ok := decayStep(cached, rs, c.now(), c.cfg.IdleWindow)
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
	return nil
}

// decayStep says whether an idle function's counter goes down now, and to
// what. It steps down only once the pool's ReplicaSet (as the informer sees
// it) runs the current counter, so the counter is never more than one step
// ahead of the ReplicaSet: however many ticks pass before a sync writes the
// ReplicaSet (merged queue keys, a lagging informer, a failed write), the
// pool shrinks one step at a time. A lagging cache only delays a step.
func decayStep(f *api.Func, rs *api.ReplicaSet, now time.Time, idle time.Duration) (int, bool) {
	if f.APIVersion == api.FuncAPIVersionV1 || f.Status.ReplicaSetUID == "" {
		return 0, false
	}
	lo, _, hi := validation.FuncBounds(&f.Spec)
	counter := clamp(f.Status.Counter, lo, hi)
	if counter <= lo {
		return 0, false
	}
	last := f.CreationTimestamp
	if f.Status.TimeStamp != nil {
		last = f.Status.TimeStamp
	}
	if last != nil && now.Sub(*last) < idle {
		return 0, false
	}
	if rs == nil || rs.UID != f.Status.ReplicaSetUID || rs.Spec.Replicas == nil || int(*rs.Spec.Replicas) != counter {
		return 0, false // the previous step is not applied yet
	}
	return counter - 1, true
}

func clamp(v, lo, hi int) int {
	return max(lo, min(v, hi))
}
