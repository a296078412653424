// Package scheduler binds pods that have no node to a node that can run
// them: it filters the nodes (ready, schedulable, enough cpu and memory
// left, host ports free, node selector), scores the rest by a policy and
// binds through the pods/binding subresource, which refuses a pod that is
// already bound, so several schedulers can run at once without binding a
// pod twice.
package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/api/equality"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/labels"
	"minik8s/pkg/nodecondition"
	"minik8s/pkg/wait"
	"minik8s/pkg/workqueue"
)

// DefaultSchedulerName is the scheduler of pods whose spec.schedulerName is empty.
const DefaultSchedulerName = "default-scheduler"

// NodeLister lists the cluster's nodes.
type NodeLister interface {
	List(sel labels.Selector) []*api.Node
}

// PodLister finds a pod.
type PodLister interface {
	Get(namespace, name string) (*api.Pod, bool)
}

// Binder binds a pod (of that uid) to a node; it fails with
// errdefs.ErrConflict when the pod is bound already.
type Binder interface {
	Bind(ctx context.Context, namespace, pod, uid, node string) error
}

// StatusWriter writes a pod's status.
type StatusWriter interface {
	UpdatePodStatus(ctx context.Context, pod *api.Pod) (*api.Pod, error)
}

var (
	_ NodeLister   = (*cache.Lister[api.Node, *api.Node])(nil)
	_ PodLister    = (*cache.Lister[api.Pod, *api.Pod])(nil)
	_ Binder       = (*client.Client)(nil)
	_ StatusWriter = statusWriter{}
	_ PodDeleter   = statusWriter{}
)

// statusWriter writes pod status through the apiserver.
type statusWriter struct{ c *client.Client }

func (w statusWriter) UpdatePodStatus(ctx context.Context, pod *api.Pod) (*api.Pod, error) {
	return w.c.Pods(pod.Namespace).UpdateStatus(ctx, pod)
}

// DeletePod deletes a preempted pod with its grace period, if it is still
// the pod of that uid.
func (w statusWriter) DeletePod(ctx context.Context, ns, name, uid string) error {
	_, err := w.c.Pods(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

// Config configures a scheduler.
type Config struct {
	// APIServer is the apiserver's URL (used when Client is nil).
	APIServer string
	Client    *client.Client
	// Policy is least-allocated (default) or round-robin.
	Policy string
	// Name is the spec.schedulerName this scheduler serves (besides empty).
	Name string
	// BindWorkers bounds the bindings in flight (default 16).
	BindWorkers int
	// Binder binds pods; nil binds through the apiserver. Tests wrap it to
	// see every binding.
	Binder Binder
	// RetryUnschedulable is how often pods that fit nowhere are tried again
	// even if nothing was seen to change (default 60s); any change of
	// nodes or freed resources retries them at once.
	RetryUnschedulable time.Duration
}

// Scheduler places pods on nodes.
type Scheduler struct {
	name   string
	policy Policy
	nodes  NodeLister
	pods   PodLister
	binder Binder
	status StatusWriter
	// deleter deletes the pods preempted (nil: nothing is preempted).
	deleter PodDeleter
	cache   *podCache
	queue   *workqueue.Queue
	// allocs caches what each node offers, parsed, by node name; guarded
	// by cache.mu.
	allocs map[string]nodeAlloc

	bindSlots chan struct{}
	binds     sync.WaitGroup
	// volumes finds pods' claims (nil: volumes are not looked at);
	// claims names the node chosen on claims waiting for it.
	volumes VolumeLister
	claims  ClaimWriter
	// events records Scheduled and FailedScheduling (nil: none).
	events events.EventRecorder

	mu sync.Mutex
	// unschedulable: keys of pods that fit nowhere, retried on changes.
	unschedulable map[string]struct{}
}

// New returns a scheduler reading nodes and pods from the listers. Its
// cache must be fed by the pod informer: see PodHandler.
func New(policy Policy, name string, nodes NodeLister, pods PodLister, binder Binder, status StatusWriter, bindWorkers int) *Scheduler {
	if name == "" {
		name = DefaultSchedulerName
	}
	if bindWorkers < 1 {
		bindWorkers = 16
	}
	return &Scheduler{
		name:          name,
		policy:        policy,
		nodes:         nodes,
		pods:          pods,
		binder:        binder,
		status:        status,
		cache:         newPodCache(),
		allocs:        map[string]nodeAlloc{},
		queue:         workqueue.New(workqueue.WithBackoff(10*time.Millisecond, 30*time.Second)),
		bindSlots:     make(chan struct{}, bindWorkers),
		unschedulable: map[string]struct{}{},
	}
}

// Run schedules pods until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Policy == "" {
		cfg.Policy = PolicyLeastAllocated
	}
	policy, err := NewPolicy(cfg.Policy)
	if err != nil {
		return err
	}
	c := cfg.Client
	if c == nil {
		if cfg.APIServer == "" {
			return errdefs.Invalid("apiserver", "the apiserver URL is required")
		}
		c = client.New(cfg.APIServer)
	}
	binder := cfg.Binder
	if binder == nil {
		binder = c
	}
	retry := cfg.RetryUnschedulable
	if retry <= 0 {
		retry = 60 * time.Second
	}
	f := cache.NewFactory(c)
	nodeInf, podInf := f.Nodes(), f.Pods()
	s := New(policy, cfg.Name, nodeInf.Lister(), podInf.Lister(), binder, statusWriter{c}, cfg.BindWorkers)
	rec := events.New(c, "default-scheduler", "")
	go rec.Run(ctx)
	s.events = rec
	s.deleter = statusWriter{c}
	pvcInf, pvInf, scInf := f.PersistentVolumeClaims(), f.PersistentVolumes(), f.StorageClasses()
	s.volumes = volumeListers{claims: pvcInf.Lister(), volumes: pvInf.Lister(), classes: scInf.Lister()}
	s.claims = claimWriter{c}
	pvcInf.AddEventHandler(volumeHandler[*api.PersistentVolumeClaim](s))
	pvInf.AddEventHandler(volumeHandler[*api.PersistentVolume](s))
	scInf.AddEventHandler(volumeHandler[*api.StorageClass](s))
	podInf.AddEventHandler(s.PodHandler())
	nodeInf.AddEventHandler(s.NodeHandler())
	f.Start(ctx)
	log.WithFields(log.Fields{"apiserver": c.Server(), "policy": cfg.Policy, "name": s.name}).Info("scheduler starting")
	if !f.WaitForSync(ctx) {
		return nil
	}
	go wait.Every(ctx, retry, s.retryUnschedulable)
	s.Run(ctx)
	log.Info("scheduler stopped")
	return nil
}

// Run schedules queued pods until ctx ends, then waits for the bindings in
// flight. One worker decides, so that each decision sees the previous ones.
func (s *Scheduler) Run(ctx context.Context) {
	workqueue.Run(ctx, s.queue, 1, "scheduler", s.sync)
	s.binds.Wait()
}

// responsible reports whether the pod waits for this scheduler.
func (s *Scheduler) responsible(p *api.Pod) bool {
	return p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !terminated(p) &&
		(p.Spec.SchedulerName == "" || p.Spec.SchedulerName == s.name)
}

// PodHandler keeps the scheduler's cache and queue up to date from the pod informer.
func (s *Scheduler) PodHandler() cache.Handler[*api.Pod] {
	return cache.Handler[*api.Pod]{
		OnAdd: func(p *api.Pod) {
			s.cache.setPod(p)
			if s.responsible(p) {
				s.queue.Add(cache.Key(p))
			}
		},
		OnUpdate: func(old, cur *api.Pod) {
			s.cache.setPod(cur)
			if s.responsible(cur) {
				s.queue.Add(cache.Key(cur))
			}
			if holds(old) && !holds(cur) {
				s.retryUnschedulable()
			}
		},
		OnDelete: func(p *api.Pod) {
			s.cache.deletePod(p)
			s.mu.Lock()
			delete(s.unschedulable, cache.Key(p))
			s.mu.Unlock()
			if holds(p) {
				s.retryUnschedulable()
			}
		},
	}
}

// holds reports whether a pod holds resources on a node.
func holds(p *api.Pod) bool { return p.Spec.NodeName != "" && !terminated(p) }

// NodeHandler retries unschedulable pods when a node appears or changes in
// a way that may let them fit. Heartbeats alone change nothing.
func (s *Scheduler) NodeHandler() cache.Handler[*api.Node] {
	return cache.Handler[*api.Node]{
		OnAdd: func(*api.Node) { s.retryUnschedulable() },
		OnUpdate: func(old, cur *api.Node) {
			if schedulingChanged(old, cur) {
				s.retryUnschedulable()
			}
		},
		OnDelete: func(n *api.Node) {
			s.cache.mu.Lock()
			delete(s.allocs, n.Name)
			s.cache.mu.Unlock()
		},
	}
}

func schedulingChanged(old, cur *api.Node) bool {
	return old.Spec.Unschedulable != cur.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		!sameMap(old.Labels, cur.Labels) ||
		!sameMap(old.Status.Allocatable, cur.Status.Allocatable) ||
		!sameMap(old.Status.Capacity, cur.Status.Capacity) ||
		nodecondition.ReadyStatus(old) != nodecondition.ReadyStatus(cur)
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// retryUnschedulable queues every pod that fit nowhere.
func (s *Scheduler) retryUnschedulable() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.unschedulable {
		s.queue.Add(k)
	}
}

func (s *Scheduler) setUnschedulable(key string, yes bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if yes {
		s.unschedulable[key] = struct{}{}
	} else {
		delete(s.unschedulable, key)
	}
}

// sync schedules the pod named by key, if it still waits for a node.
func (s *Scheduler) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	pod, ok := s.pods.Get(ns, name)
	if !ok || !s.responsible(pod) || s.cache.isAssumed(key, pod.UID) {
		s.setUnschedulable(key, false)
		return nil
	}
	if len(pod.Spec.SchedulingGates) > 0 {
		// Kept out of scheduling until its gates are taken away (an
		// update of the pod enqueues it again), as in Kubernetes.
		s.setUnschedulable(key, false)
		return s.markUnschedulable(ctx, pod, reasonGated, "Scheduling is blocked due to non-empty scheduling gates", "")
	}
	pi := newPodInfo(pod)
	if why := s.podVolumes(pi); why != "" {
		// Nothing on any node helps: the pod waits for its claims (their
		// changes try it again).
		s.setUnschedulable(key, true)
		msg := fmt.Sprintf("0/%d nodes are available: %s.", len(s.nodes.List(nil)), why)
		return s.markUnschedulable(ctx, pod, reasonUnschedulablePod, msg, "")
	}
	canPreempt := s.deleter != nil && s.mayPreempt(pod)
	node, msg, victims := s.schedule(pi, canPreempt)
	if node == "" {
		s.setUnschedulable(key, true)
		if victims == nil {
			return s.markUnschedulable(ctx, pod, reasonUnschedulablePod, msg, "")
		}
		// Nominated first: a pod whose victims are going does not
		// preempt again elsewhere (mayPreempt).
		if err := s.markUnschedulable(ctx, pod, reasonUnschedulablePod, msg, victims.node); err != nil {
			return err
		}
		return s.preempt(ctx, pod, victims)
	}
	s.setUnschedulable(key, false)
	s.bind(ctx, key, pi, node)
	return nil
}

// schedule picks a node for the pod and counts the pod there at once; it
// returns "" and the reasons when the pod fits nowhere, and then, if
// preempt, where pods of lower priority could make room (nil: nowhere).
func (s *Scheduler) schedule(pi *podInfo, preempt bool) (string, string, *candidate) {
	nodes := s.nodes.List(nil)
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	infos := make([]*nodeInfo, len(nodes))
	for i, n := range nodes {
		a, ok := s.allocs[n.Name]
		if !ok || a.resourceVersion != n.ResourceVersion {
			a.alloc, a.maxPods = allocatable(n)
			a.resourceVersion = n.ResourceVersion
			a.matchable = (&nodeInfo{node: n}).asMatchable()
			s.allocs[n.Name] = a
		}
		infos[i] = &nodeInfo{node: n, alloc: a.alloc, maxPods: a.maxPods, used: s.cache.usageLocked(n.Name), matchable: a.matchable}
	}
	s.cache.withNominated(pi, infos)
	pi.spread = newSpread(pi, infos, s.cache.pods)
	pi.podAffinity = newPodAffinity(pi, infos, s.cache)
	fit, reasons := feasible(pi, infos)
	if len(fit) == 0 {
		var c *candidate
		if preempt {
			c = s.findPreemption(pi, infos)
		}
		return "", unschedulableMessage(len(nodes), reasons), c
	}
	pick := s.policy.Pick(pi, fit)
	s.cache.assumeLocked(pi, pick.node.Name)
	return pick.node.Name, "", nil
}

// bind binds the pod in the background, so that deciding the next pods
// does not wait for the apiserver.
func (s *Scheduler) bind(ctx context.Context, key string, pi *podInfo, node string) {
	select {
	case s.bindSlots <- struct{}{}:
	case <-ctx.Done():
		s.cache.forget(key, pi.pod.UID)
		return
	}
	s.binds.Add(1)
	go func() {
		defer s.binds.Done()
		defer func() { <-s.bindSlots }()
		p := pi.pod
		fields := log.Fields{"pod": key, "node": node}
		err := s.selectNode(ctx, pi, node)
		if err == nil {
			err = s.binder.Bind(ctx, p.Namespace, p.Name, p.UID, node)
		}
		switch {
		case err == nil:
			log.WithFields(fields).Debug("bound pod")
			s.queue.Forget(key)
			events.Eventf(s.events, p, api.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", p.Namespace, p.Name, node)
			return
		case errdefs.IsNotFound(err):
			// Deleted meanwhile; its delete event cleans up.
			s.cache.forget(key, p.UID)
			return
		case errdefs.IsConflict(err):
			// Bound by another scheduler, or a new pod of that name: the
			// watch brings the truth; look again once it may have.
			log.WithFields(fields).WithError(err).Debug("binding refused")
		case ctx.Err() != nil:
			s.cache.forget(key, p.UID)
			return
		default:
			log.WithFields(fields).WithError(err).Warn("binding failed, will retry")
		}
		s.cache.forget(key, p.UID)
		s.retryUnschedulable()
		s.queue.AddRateLimited(key)
	}()
}

// markUnschedulable records on the pod why it fits nowhere (once per
// distinct reason, so that retries do not write again and again), and
// the node it is nominated to, if nominate says one.
func (s *Scheduler) markUnschedulable(ctx context.Context, pod *api.Pod, reason, msg, nominate string) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == api.PodScheduled && c.Status == api.ConditionFalse && c.Reason == reason && c.Message == msg &&
			(nominate == "" || nominate == pod.Status.NominatedNodeName) {
			return nil
		}
	}
	if reason == reasonUnschedulablePod {
		events.Eventf(s.events, pod, api.EventTypeWarning, "FailedScheduling", "%s", msg)
	}
	up := cache.DeepCopy(pod)
	now := time.Now().UTC()
	setCondition(&up.Status, api.PodCondition{Type: api.PodScheduled, Status: api.ConditionFalse,
		Reason: reason, Message: msg, LastTransitionTime: &now})
	if nominate != "" {
		up.Status.NominatedNodeName = nominate
	}
	// Conditional on the version read, so that a pod bound meanwhile is
	// not marked unschedulable.
	_, err := s.status.UpdatePodStatus(ctx, up)
	switch {
	case err == nil:
		log.WithFields(log.Fields{"pod": cache.Key(pod), "reason": msg}).Info("pod is unschedulable")
	case !errdefs.IsNotFound(err):
		return fmt.Errorf("recording that pod %s is unschedulable: %w", cache.Key(pod), err)
	}
	return nil
}

// The reasons of a PodScheduled condition that is False, as Kubernetes
// words them.
const (
	reasonUnschedulablePod = "Unschedulable"
	reasonGated            = "SchedulingGated"
)

func setCondition(st *api.PodStatus, cond api.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == cond.Type {
			if st.Conditions[i].Status == cond.Status {
				cond.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}
