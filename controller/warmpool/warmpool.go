// Package warmpool keeps warm generic function pods: in every namespace
// that has Python functions, for every runtime they use, on every ready
// node, Size pods running a generic funcserver that a function runner can
// hand a function on a cold call (pkg/function's warm.go). It refills
// what runners claim and removes the pods of runtimes, namespaces and
// nodes that no longer need them. It runs only when the apiserver has a
// cluster CA: a generic pod takes its function only from function runners
// with a certificate of it.
package warmpool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/nodecondition"
	"minik8s/pkg/wait"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in the controller manager.
const Name = "warmpool"

// DefaultSize is the warm pods per runtime, namespace and node of
// `minik8s up` and the controller manager.
const DefaultSize = 1

const (
	// pendingTTL is how long a pod created is counted before the cache
	// shows it.
	pendingTTL = 30 * time.Second
	// caRecheck is how often a cluster without a CA is asked again.
	caRecheck = 30 * time.Second
)

// Controller keeps the warm pools.
type Controller struct {
	client *client.Client
	size   int
	funcs  *cache.Informer[api.Func, *api.Func]
	pods   *cache.Informer[api.Pod, *api.Pod]
	nodes  *cache.Informer[api.Node, *api.Node]
	queue  *workqueue.Queue

	mu sync.Mutex
	// pending are the pods created and not seen yet, per pool, by name.
	pending map[pool]map[string]time.Time
	// hasCA is whether the apiserver has a cluster CA, once known.
	hasCA   bool
	caAsked time.Time
}

// pool is one warm pool: a runtime's pods of a namespace on a node.
type pool struct{ ns, runtime, node string }

// New returns the controller; size 0 keeps no pod (and removes those kept).
func New(c *client.Client, f *cache.Factory, size int) *Controller {
	ctl := &Controller{client: c, size: max(size, 0), funcs: f.Funcs(), pods: f.Pods(), nodes: f.Nodes(),
		queue: workqueue.New(), pending: map[pool]map[string]time.Time{}}
	byNS := func(o api.Object) { ctl.queue.Add(namespaceOf(o.GetObjectMeta())) }
	ctl.funcs.AddEventHandler(cache.Handler[*api.Func]{
		OnAdd:    func(o *api.Func) { byNS(o) },
		OnUpdate: func(_, o *api.Func) { byNS(o) },
		OnDelete: func(o *api.Func) { byNS(o) },
	})
	onPod := func(p *api.Pod) {
		if _, ok := p.Labels[function.LabelWarm]; ok {
			byNS(p)
		}
	}
	ctl.pods.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd: onPod,
		// A claim removes the label: the old pod says it was warm.
		OnUpdate: func(old, cur *api.Pod) { onPod(old); onPod(cur) },
		OnDelete: onPod,
	})
	all := func() {
		for _, ns := range ctl.namespaces() {
			ctl.queue.Add(ns)
		}
	}
	ctl.nodes.AddEventHandler(cache.Handler[*api.Node]{
		OnAdd: func(*api.Node) { all() },
		OnUpdate: func(old, cur *api.Node) {
			if eligible(old) != eligible(cur) {
				all()
			}
		},
		OnDelete: func(*api.Node) { all() },
	})
	return ctl
}

func namespaceOf(m *api.ObjectMeta) string {
	if m.Namespace == "" {
		return api.DefaultNamespace
	}
	return m.Namespace
}

// namespaces are those with functions or warm pods.
func (c *Controller) namespaces() []string {
	set := map[string]bool{}
	for _, f := range c.funcs.Lister().List(labels.Selector{}) {
		set[namespaceOf(&f.ObjectMeta)] = true
	}
	for _, p := range c.pods.Lister().List(labels.Selector{}) {
		if _, ok := p.Labels[function.LabelWarm]; ok {
			set[namespaceOf(&p.ObjectMeta)] = true
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	return out
}

// Run keeps the pools until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	for _, inf := range []interface{ Start(context.Context) }{c.funcs, c.pods, c.nodes} {
		inf.Start(ctx)
	}
	// Pools wait for a CA, pods for the cache past pendingTTL.
	go wait.Every(ctx, caRecheck, func() {
		for _, ns := range c.namespaces() {
			c.queue.Add(ns)
		}
	})
	workqueue.Run(ctx, c.queue, workers, Name, c.sync)
}

// eligible says whether warm pods may run on n: ready, schedulable, and
// without a taint that keeps pods off.
func eligible(n *api.Node) bool {
	if n.DeletionTimestamp != nil || n.Spec.Unschedulable || nodecondition.ReadyStatus(n) != api.ConditionTrue {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == "NoSchedule" || t.Effect == "NoExecute" {
			return false
		}
	}
	return true
}

// want is how many warm pods each pool of ns should have.
func (c *Controller) want(ctx context.Context, ns string) (map[pool]int, error) {
	out := map[pool]int{}
	if c.size == 0 {
		return out, nil
	}
	runtimes := map[string]bool{}
	for _, f := range c.funcs.Lister().ListNamespace(ns, labels.Selector{}) {
		if f.DeletionTimestamp == nil && function.CanUseWarm(f) {
			runtimes[function.Runtime(&f.Spec)] = true
		}
	}
	if len(runtimes) == 0 {
		return out, nil
	}
	ok, err := c.clusterCA(ctx)
	if err != nil || !ok {
		return out, err
	}
	for _, n := range c.nodes.Lister().List(labels.Selector{}) {
		if !eligible(n) {
			continue
		}
		for rt := range runtimes {
			out[pool{ns, rt, n.Name}] = c.size
		}
	}
	return out, nil
}

// clusterCA says whether the apiserver serves a cluster CA (at /cacerts,
// as the kubelets read it), asked again every caRecheck while it has none.
func (c *Controller) clusterCA(ctx context.Context) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hasCA || time.Since(c.caAsked) < caRecheck {
		return c.hasCA, nil
	}
	var pem []byte
	err := c.client.Do(ctx, http.MethodGet, "/cacerts", nil, &pem)
	switch {
	case errdefs.IsNotFound(err):
		c.caAsked = time.Now()
		log.Info("warm pool: the apiserver has no cluster CA, so no function runner could specialise a pod; no warm pods")
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the cluster CA: %w", err)
	}
	c.hasCA = len(pem) > 0
	c.caAsked = time.Now()
	return c.hasCA, nil
}

func (c *Controller) sync(ctx context.Context, ns string) error {
	want, err := c.want(ctx, ns)
	if err != nil {
		return err
	}
	have := map[pool][]*api.Pod{}
	var errs []error
	for _, p := range c.pods.Lister().ListNamespace(ns, labels.Selector{}) {
		if _, ok := p.Labels[function.LabelWarm]; !ok || p.DeletionTimestamp != nil {
			continue
		}
		if len(p.Spec.Containers) == 0 {
			continue
		}
		k := pool{ns, p.Spec.Containers[0].Image, p.Spec.NodeName}
		if p.Status.Phase == api.PodFailed || p.Status.Phase == api.PodSucceeded || want[k] == 0 {
			// Ended, or no longer needed: removed (and replaced if needed).
			errs = append(errs, c.remove(ctx, p))
			continue
		}
		have[k] = append(have[k], p)
	}
	for k, n := range want {
		pods := have[k]
		missing := n - len(pods) - c.pendingFor(k, pods)
		for i := 0; i < missing; i++ {
			errs = append(errs, c.create(ctx, k))
		}
		if extra := len(pods) - n; extra > 0 {
			// Newest first: the older ones are more likely ready.
			sort.Slice(pods, func(i, j int) bool { return newer(pods[i], pods[j]) })
			for _, p := range pods[:extra] {
				errs = append(errs, c.remove(ctx, p))
			}
		}
	}
	return errors.Join(errs...)
}

func newer(a, b *api.Pod) bool {
	if a.CreationTimestamp == nil || b.CreationTimestamp == nil {
		return a.Name > b.Name
	}
	return a.CreationTimestamp.After(*b.CreationTimestamp)
}

// pendingFor counts k's pods created and not among seen yet, and forgets
// those seen or too old.
func (c *Controller) pendingFor(k pool, seen []*api.Pod) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.pending[k]
	for _, p := range seen {
		delete(m, p.Name)
	}
	for name, at := range m {
		if time.Since(at) > pendingTTL {
			delete(m, name)
		}
	}
	if len(m) == 0 {
		delete(c.pending, k)
	}
	return len(m)
}

func (c *Controller) create(ctx context.Context, k pool) error {
	pod := &api.Pod{
		ObjectMeta: api.ObjectMeta{
			GenerateName: "func-warm-",
			Namespace:    k.ns,
			Labels:       map[string]string{function.LabelWarm: function.WarmRuntime(k.runtime)},
		},
		Spec: function.WarmPodSpec(k.runtime),
	}
	// Placed as a DaemonSet's pods are: the pool is per node.
	pod.Spec.NodeName = k.node
	created, err := c.client.Pods(k.ns).Create(ctx, pod)
	if err != nil {
		return fmt.Errorf("creating a warm pod of %s on node %s: %w", k.runtime, k.node, err)
	}
	c.mu.Lock()
	if c.pending[k] == nil {
		c.pending[k] = map[string]time.Time{}
	}
	c.pending[k][created.Name] = time.Now()
	c.mu.Unlock()
	log.WithFields(log.Fields{"namespace": k.ns, "pod": created.Name, "node": k.node, "runtime": k.runtime}).Debug("warm pod created")
	return nil
}

// remove deletes a warm pod unless a runner claimed it meanwhile (its uid
// and version as read: a claim changes its labels).
func (c *Controller) remove(ctx context.Context, p *api.Pod) error {
	_, err := c.client.Pods(p.Namespace).Delete(ctx, p.Name, client.DeleteOptions{UID: p.UID, ResourceVersion: p.ResourceVersion})
	if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
		return fmt.Errorf("removing warm pod %s: %w", p.Name, err)
	}
	return nil
}
