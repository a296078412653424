// Package nodelifecycle watches node heartbeats. A node whose kubelet has
// not renewed its Ready condition for the grace period is marked
// Ready=Unknown (NodeStatusUnknown) and tainted node.kubernetes.io/unreachable
// (NoSchedule and NoExecute), one whose Ready is False
// node.kubernetes.io/not-ready, as Kubernetes' node lifecycle controller
// does; the taints go once Ready is True again. Pods are evicted by the
// node's NoExecute taints (taints.go): those of an unreachable node are
// marked Failed (NodeLost) and removed at once, so that their ReplicaSets
// recreate them on other nodes. A kubelet that comes back writes
// Ready=True itself; the controller only ever acts on a heartbeat it has
// not seen change for the whole grace period, so it never fights a live
// kubelet.
package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/nodecondition"
	"minik8s/pkg/wait"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "nodelifecycle"

// DefaultGracePeriod is how long a node may go without a heartbeat.
const DefaultGracePeriod = 20 * time.Second

// Reasons written on nodes and pods, as Kubernetes words them.
const (
	ReasonNodeStatusUnknown = "NodeStatusUnknown"
	ReasonNodeLost          = "NodeLost"
)

// API is what the controller writes.
type API interface {
	// Healthy reports whether the apiserver answers.
	Healthy(ctx context.Context) error
	GetNode(ctx context.Context, name string) (*api.Node, error)
	// UpdateNode writes the node's spec (its taints), conditional on its
	// resourceVersion.
	UpdateNode(ctx context.Context, n *api.Node) (*api.Node, error)
	UpdateNodeStatus(ctx context.Context, n *api.Node) (*api.Node, error)
	UpdatePodStatus(ctx context.Context, p *api.Pod) (*api.Pod, error)
	// ForceDeletePod deletes a pod at once (grace period 0).
	ForceDeletePod(ctx context.Context, namespace, name, uid string) error
	// DeletePod deletes a pod with its own grace period.
	DeletePod(ctx context.Context, namespace, name, uid string) error
}

var _ API = clientAPI{}

type clientAPI struct{ c *client.Client }

func (a clientAPI) Healthy(ctx context.Context) error { return a.c.Healthy(ctx) }

func (a clientAPI) GetNode(ctx context.Context, name string) (*api.Node, error) {
	return a.c.Nodes().Get(ctx, name)
}

func (a clientAPI) UpdateNode(ctx context.Context, n *api.Node) (*api.Node, error) {
	return a.c.Nodes().Update(ctx, n)
}

func (a clientAPI) UpdateNodeStatus(ctx context.Context, n *api.Node) (*api.Node, error) {
	return a.c.Nodes().UpdateStatus(ctx, n)
}

func (a clientAPI) UpdatePodStatus(ctx context.Context, p *api.Pod) (*api.Pod, error) {
	return a.c.Pods(p.Namespace).UpdateStatus(ctx, p)
}

func (a clientAPI) ForceDeletePod(ctx context.Context, ns, name, uid string) error {
	zero := int64(0)
	_, err := a.c.Pods(ns).Delete(ctx, name, client.DeleteOptions{GracePeriodSeconds: &zero, UID: uid})
	return err
}

func (a clientAPI) DeletePod(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.Pods(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

// podNodeIndex indexes pods by spec.nodeName.
const podNodeIndex = "nodelifecycle/node"

// Controller is the node lifecycle controller.
type Controller struct {
	api   API
	nodes *cache.Lister[api.Node, *api.Node]
	pods  *cache.Lister[api.Pod, *api.Pod]
	grace time.Duration
	queue *workqueue.Queue
	now   func() time.Time

	mu sync.Mutex
	// seen is, per node, the last heartbeat value and when this controller
	// saw it change. Ages are measured on this controller's clock, so a
	// kubelet whose clock is off is judged fairly.
	seen map[string]observation
	// While the apiserver cannot be reached no heartbeat can arrive, so
	// silence is only counted from when it answers again: an apiserver
	// outage longer than the grace period must not fail every node.
	unreachable    bool
	reachableSince time.Time
	// taintSeen is when this controller first saw each NoExecute taint
	// without a timeAdded (by taintKey).
	taintSeen map[string]time.Time
}

type observation struct {
	heartbeat time.Time
	at        time.Time
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory, grace time.Duration) *Controller {
	return newController(clientAPI{c}, f.Nodes(), f.Pods(), grace)
}

func newController(a API, nodeInf *cache.Informer[api.Node, *api.Node], podInf *cache.Informer[api.Pod, *api.Pod], grace time.Duration) *Controller {
	if grace <= 0 {
		grace = DefaultGracePeriod
	}
	podInf.AddIndexer(podNodeIndex, func(p *api.Pod) []string {
		if p.Spec.NodeName == "" {
			return nil
		}
		return []string{p.Spec.NodeName}
	})
	nc := &Controller{
		api:   a,
		nodes: nodeInf.Lister(),
		pods:  podInf.Lister(),
		grace: grace,
		queue: workqueue.New(),
		now:   time.Now,
		seen:  map[string]observation{},

		taintSeen: map[string]time.Time{},
	}
	nodeInf.AddEventHandler(cache.Handler[*api.Node]{
		OnAdd:    func(n *api.Node) { nc.observe(n); nc.queue.Add(n.Name) },
		OnUpdate: func(_, n *api.Node) { nc.observe(n); nc.queue.Add(n.Name) },
		OnDelete: func(n *api.Node) { nc.queue.Add(n.Name) },
	})
	// A pod bound to a lost, unknown or NoExecute-tainted node is looked
	// at too.
	podInf.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd:    nc.podChanged,
		OnUpdate: func(_, p *api.Pod) { nc.podChanged(p) },
	})
	return nc
}

func (nc *Controller) podChanged(p *api.Pod) {
	if p.Spec.NodeName == "" {
		return
	}
	if n, ok := nc.nodes.Get("", p.Spec.NodeName); !ok || nodecondition.ReadyStatus(n) == api.ConditionUnknown || len(noExecuteTaints(n)) > 0 {
		nc.queue.Add(p.Spec.NodeName)
	}
}

// observe records the node's heartbeat, noting when it changed.
func (nc *Controller) observe(n *api.Node) {
	hb := heartbeat(n)
	nc.mu.Lock()
	defer nc.mu.Unlock()
	o, ok := nc.seen[n.Name]
	if !ok || !o.heartbeat.Equal(hb) {
		nc.seen[n.Name] = observation{heartbeat: hb, at: nc.now()}
	}
}

// lastChange is when the node's heartbeat was last seen to change.
func (nc *Controller) lastChange(name string) time.Time {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	o, ok := nc.seen[name]
	if !ok {
		o = observation{at: nc.now()}
		nc.seen[name] = o
	}
	return o.at
}

// forget drops what was seen of a deleted node.
func (nc *Controller) forget(name string) {
	nc.forgetTaints(name, nil)
	nc.mu.Lock()
	defer nc.mu.Unlock()
	delete(nc.seen, name)
}

// monitorPeriod is how often every node is checked.
func (nc *Controller) monitorPeriod() time.Duration {
	return min(max(nc.grace/4, 100*time.Millisecond), 5*time.Second)
}

// Run checks nodes until ctx ends.
func (nc *Controller) Run(ctx context.Context, workers int) {
	go wait.Every(ctx, nc.monitorPeriod(), func() {
		nc.probe(ctx)
		for _, n := range nc.nodes.List(nil) {
			nc.queue.Add(n.Name)
		}
	})
	workqueue.Run(ctx, nc.queue, workers, Name, nc.sync)
}

// probe records whether the apiserver answers.
func (nc *Controller) probe(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, nc.monitorPeriod())
	err := nc.api.Healthy(pctx)
	cancel()
	nc.mu.Lock()
	defer nc.mu.Unlock()
	switch {
	case err != nil && ctx.Err() == nil:
		if !nc.unreachable {
			log.WithError(err).Warn("apiserver unreachable: node heartbeats are not judged until it answers")
		}
		nc.unreachable = true
	case err == nil && nc.unreachable:
		nc.unreachable = false
		nc.reachableSince = nc.now()
	}
}

// silence is how long a node's heartbeat has not been seen to change
// while the apiserver could be reached; ok is false while it cannot.
func (nc *Controller) silence(name string) (d time.Duration, ok bool) {
	last := nc.lastChange(name)
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if nc.unreachable {
		return 0, false
	}
	if nc.reachableSince.After(last) {
		last = nc.reachableSince
	}
	return nc.now().Sub(last), true
}

func heartbeat(n *api.Node) time.Time {
	if c := nodecondition.Ready(n); c != nil && c.LastHeartbeatTime != nil {
		return *c.LastHeartbeatTime
	}
	return time.Time{}
}

func (nc *Controller) sync(ctx context.Context, name string) error {
	node, ok := nc.nodes.Get("", name)
	if !ok {
		// A pod can show up bound to a node before the node shows up in
		// the cache: ask the apiserver before calling the node gone.
		_, err := nc.api.GetNode(ctx, name)
		if err == nil {
			return nil
		}
		if !errdefs.IsNotFound(err) {
			return err
		}
		nc.forget(name)
		return nc.evictPods(ctx, name, fmt.Sprintf("Node %s is gone", name))
	}
	// An Unknown node stays so until its kubelet writes Ready=True.
	if nodecondition.ReadyStatus(node) != api.ConditionUnknown {
		silent, ok := nc.silence(name)
		switch {
		case !ok: // the next probe or heartbeat brings us back
		case silent <= nc.grace:
			// Look again when the grace period would run out.
			nc.queue.AddAfter(name, nc.grace-silent+10*time.Millisecond)
		default:
			var err error
			if node, err = nc.markUnknown(ctx, node, silent); err != nil {
				return err
			}
		}
	}
	node, err := nc.keepConditionTaints(ctx, node)
	if err != nil {
		return err
	}
	return nc.evictByTaints(ctx, node)
}

func unresponsive(node string) string {
	return fmt.Sprintf("Node %s which was running the pod is unresponsive", node)
}

// markUnknown sets Ready=Unknown. The write is conditional on the version
// read: had the kubelet posted meanwhile, it fails and the next sync sees
// the fresh heartbeat.
func (nc *Controller) markUnknown(ctx context.Context, node *api.Node, silent time.Duration) (*api.Node, error) {
	log.WithFields(log.Fields{"node": node.Name, "silent": silent.Round(time.Second).String()}).
		Warn("node stopped posting status, marking it not ready")
	up := cache.DeepCopy(node)
	now := nc.now().UTC()
	c := nodecondition.Ready(up)
	if c == nil {
		up.Status.Conditions = append(up.Status.Conditions, api.NodeCondition{Type: api.NodeReady})
		c = &up.Status.Conditions[len(up.Status.Conditions)-1]
	}
	c.Status, c.Reason, c.Message = api.ConditionUnknown, ReasonNodeStatusUnknown, "Kubelet stopped posting node status."
	c.LastTransitionTime = &now
	out, err := nc.api.UpdateNodeStatus(ctx, up)
	if err != nil {
		return nil, fmt.Errorf("marking node %s not ready: %w", node.Name, err)
	}
	return out, nil
}

// evictPods marks the pods bound to a deleted node Failed and deletes them
// at once: no kubelet is there to finish a graceful deletion, and no node
// is there for them to tolerate.
func (nc *Controller) evictPods(ctx context.Context, node, msg string) error {
	var errs []error
	for _, p := range nc.pods.ByIndex(podNodeIndex, node) {
		if err := nc.evict(ctx, p, msg); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// evict marks pod p of a lost node Failed (NodeLost) and deletes it at once.
func (nc *Controller) evict(ctx context.Context, p *api.Pod, msg string) error {
	if p.Status.Phase != api.PodFailed && p.Status.Phase != api.PodSucceeded {
		up := cache.DeepCopy(p)
		now := nc.now().UTC()
		up.Status.Phase, up.Status.Reason, up.Status.Message = api.PodFailed, ReasonNodeLost, msg
		for i := range up.Status.Conditions {
			if c := &up.Status.Conditions[i]; c.Type == api.PodReady && c.Status != api.ConditionFalse {
				c.Status, c.Reason, c.LastTransitionTime = api.ConditionFalse, ReasonNodeLost, &now
			}
		}
		_, err := nc.api.UpdatePodStatus(ctx, up)
		if errdefs.IsNotFound(err) {
			return nil
		}
		// A failed status write must not keep the pod: the delete is what
		// lets its ReplicaSet replace it.
		if err != nil {
			log.WithError(err).WithField("pod", cache.Key(p)).Debug("marking pod failed")
		}
	}
	err := nc.api.ForceDeletePod(ctx, p.Namespace, p.Name, p.UID)
	switch {
	case err == nil:
		log.WithFields(log.Fields{"pod": cache.Key(p), "node": p.Spec.NodeName}).Info("removed pod of lost node")
	case !errdefs.IsNotFound(err) && !errdefs.IsConflict(err):
		return fmt.Errorf("deleting pod %s of lost node %s: %w", cache.Key(p), p.Spec.NodeName, err)
	}
	return nil
}
