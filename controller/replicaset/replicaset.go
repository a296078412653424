// Package replicaset keeps the number of pods of each ReplicaSet at its
// spec.replicas: it creates pods from the template, owned by the
// ReplicaSet (or, short of replicas, adopts a warm function pod a runner
// claimed for its function), deletes the surplus (unscheduled, then not ready, then newest
// first) and reports the counts in the ReplicaSet's status.
package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/expectations"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/names"
	"minik8s/pkg/owner"
	"minik8s/pkg/podstatus"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "replicaset"

// burstReplicas bounds the pods created or deleted in one sync.
const burstReplicas = 500

// API is what the controller writes.
type API interface {
	CreatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error)
	UpdatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error)
	DeletePod(ctx context.Context, namespace, name, uid string) error
	GetReplicaSet(ctx context.Context, namespace, name string) (*api.ReplicaSet, error)
	UpdateReplicaSetStatus(ctx context.Context, rs *api.ReplicaSet) (*api.ReplicaSet, error)
}

var _ API = clientAPI{}

type clientAPI struct{ c *client.Client }

func (a clientAPI) CreatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error) {
	return a.c.Pods(pod.Namespace).Create(ctx, pod)
}

func (a clientAPI) UpdatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error) {
	return a.c.Pods(pod.Namespace).Update(ctx, pod)
}

func (a clientAPI) DeletePod(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.Pods(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

func (a clientAPI) GetReplicaSet(ctx context.Context, ns, name string) (*api.ReplicaSet, error) {
	return a.c.ReplicaSets(ns).Get(ctx, name)
}

func (a clientAPI) UpdateReplicaSetStatus(ctx context.Context, rs *api.ReplicaSet) (*api.ReplicaSet, error) {
	return a.c.ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs)
}

// Controller is the ReplicaSet controller.
type Controller struct {
	api    API
	rss    *cache.Lister[api.ReplicaSet, *api.ReplicaSet]
	pods   *cache.Lister[api.Pod, *api.Pod]
	queue  *workqueue.Queue
	exp    *expectations.Expectations
	events events.EventRecorder
}

// New returns the controller, registered with the factory's informers;
// rec records the pods it creates and deletes.
func New(c *client.Client, f *cache.Factory, rec events.EventRecorder) *Controller {
	rsInf, podInf := f.ReplicaSets(), f.Pods()
	rc := &Controller{
		events: rec,
		api:    clientAPI{c},
		rss:    rsInf.Lister(),
		pods:   podInf.Lister(),
		queue:  workqueue.New(),
		exp:    expectations.New(),
	}
	rsInf.AddEventHandler(cache.Handler[*api.ReplicaSet]{
		OnAdd:    func(rs *api.ReplicaSet) { rc.queue.Add(cache.Key(rs)) },
		OnUpdate: func(_, rs *api.ReplicaSet) { rc.queue.Add(cache.Key(rs)) },
		OnDelete: func(rs *api.ReplicaSet) {
			rc.exp.Forget(cache.Key(rs))
			rc.queue.Add(cache.Key(rs))
		},
	})
	podInf.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd: func(p *api.Pod) {
			key, ok := rc.owner(p)
			if !ok {
				rc.enqueueSelecting(p)
				return
			}
			if p.DeletionTimestamp != nil {
				rc.exp.DeletionObserved(key, p.UID)
			} else {
				rc.exp.CreationObserved(key)
			}
			rc.queue.Add(key)
		},
		OnUpdate: func(old, cur *api.Pod) {
			if key, ok := rc.owner(old); ok {
				rc.queue.Add(key)
			}
			key, ok := rc.owner(cur)
			if !ok {
				rc.enqueueSelecting(cur)
				return
			}
			if _, was := rc.owner(old); !was {
				// Adopted: counted as a creation.
				rc.exp.CreationObserved(key)
			}
			if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
				rc.exp.DeletionObserved(key, cur.UID)
			}
			rc.queue.Add(key)
		},
		OnDelete: func(p *api.Pod) {
			key, ok := rc.owner(p)
			if !ok {
				return
			}
			rc.exp.DeletionObserved(key, p.UID)
			rc.queue.Add(key)
		},
	})
	return rc
}

// Run syncs ReplicaSets until ctx ends.
func (rc *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, rc.queue, workers, Name, rc.sync)
}

// enqueueSelecting queues the ReplicaSets whose selector matches an
// orphan pod: one short of replicas adopts it.
func (rc *Controller) enqueueSelecting(p *api.Pod) {
	if !adoptable(p) {
		return
	}
	for _, rs := range rc.rss.ListNamespace(p.Namespace, labels.Selector{}) {
		if sel, err := labels.FromLabelSelector(rs.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(p.Labels) {
			rc.queue.Add(cache.Key(rs))
		}
	}
}

// adoptable says whether p is an orphan a ReplicaSet may adopt: a warm
// function pod a runner claimed (function.AnnotationClaimed), with no
// controller, alive. Other orphans are left alone, as they were before
// warm pods: adopting any pod that matches would let whoever may create
// pods in a namespace have a ReplicaSet take them for its own.
func adoptable(p *api.Pod) bool {
	_, claimed := p.Annotations[function.AnnotationClaimed]
	return claimed && owner.ControllerOf(&p.ObjectMeta) == nil && p.DeletionTimestamp == nil &&
		p.Status.Phase != api.PodSucceeded && p.Status.Phase != api.PodFailed
}

// owner returns the key of the ReplicaSet controlling the pod.
func (rc *Controller) owner(p *api.Pod) (string, bool) {
	return owner.ControllerKey(&p.ObjectMeta, api.ReplicaSetsResource.Kind)
}

func (rc *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	rs, ok := rc.rss.Get(ns, name)
	if !ok {
		rc.exp.Forget(key)
		return nil
	}
	sel, err := labels.FromLabelSelector(rs.Spec.Selector)
	if err != nil {
		// The apiserver validates selectors; nothing to do but say so.
		log.WithError(err).WithField("replicaset", key).Warn("invalid selector")
		return nil
	}
	var active, orphans []*api.Pod
	for _, p := range rc.pods.ListNamespace(ns, sel) {
		if !owner.IsControlledBy(&p.ObjectMeta, rs.UID) {
			if !sel.Empty() && adoptable(p) {
				orphans = append(orphans, p)
			}
			continue
		}
		if p.DeletionTimestamp == nil && p.Status.Phase != api.PodSucceeded && p.Status.Phase != api.PodFailed {
			active = append(active, p)
		}
	}
	var manageErr error
	// A ReplicaSet being deleted (in the foreground: its finalizer keeps
	// it while the garbage collector deletes its pods) makes no more.
	if rc.exp.Satisfied(key) && rs.DeletionTimestamp == nil {
		manageErr = rc.manage(ctx, key, rs, active, orphans)
	}
	if err := rc.updateStatus(ctx, rs, active); err != nil {
		return errors.Join(manageErr, err)
	}
	return manageErr
}

func want(rs *api.ReplicaSet) int {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return int(*rs.Spec.Replicas)
}

// manage creates or deletes pods so that active has want(rs) pods. Short
// of pods, it adopts orphans first: unlike Kubernetes' it adopts none it
// would then delete as a surplus (a warm function pod claimed while its
// function is still at zero replicas must live until the function's
// counter rises).
func (rc *Controller) manage(ctx context.Context, key string, rs *api.ReplicaSet, active, orphans []*api.Pod) error {
	diff := len(active) - want(rs)
	if diff < 0 && len(orphans) > 0 {
		adopted, err := rc.adopt(ctx, key, rs, orphans, -diff)
		if err != nil {
			return err
		}
		diff += adopted
	}
	switch {
	case diff < 0:
		n := min(-diff, burstReplicas)
		rc.exp.AddCreations(key, n)
		log.WithFields(log.Fields{"replicaset": key, "create": n}).Info("creating pods")
		created, err := slowStartBatch(n, func() error { return rc.createPod(ctx, rs) })
		// Creations that did not happen will never be observed.
		for i := created; i < n; i++ {
			rc.exp.CreationObserved(key)
		}
		return err
	case diff > 0:
		victims := podsToDelete(active, min(diff, burstReplicas))
		uids := make([]string, len(victims))
		for i, p := range victims {
			uids[i] = p.UID
		}
		rc.exp.ExpectDeletions(key, uids)
		log.WithFields(log.Fields{"replicaset": key, "delete": len(victims)}).Info("deleting pods")
		var wg sync.WaitGroup
		errs := make([]error, len(victims))
		for i, p := range victims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := rc.api.DeletePod(ctx, p.Namespace, p.Name, p.UID)
				if err == nil {
					events.Eventf(rc.events, rs, api.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
				}
				if err != nil && !errdefs.IsNotFound(err) {
					rc.exp.DeletionObserved(key, p.UID)
					errs[i] = fmt.Errorf("deleting pod %s: %w", p.Name, err)
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	return nil
}

// adopt makes rs the controller of up to n orphans, ready ones and older
// ones first; it returns how many it adopted. An orphan changed meanwhile
// (a conflict) or gone is left for the next sync.
func (rc *Controller) adopt(ctx context.Context, key string, rs *api.ReplicaSet, orphans []*api.Pod, n int) (int, error) {
	sorted := append([]*api.Pod(nil), orphans...)
	sort.SliceStable(sorted, func(i, j int) bool { return deleteFirst(sorted[j], sorted[i]) })
	adopted := 0
	for _, p := range sorted[:min(n, len(sorted))] {
		next := cache.DeepCopy(p)
		next.OwnerReferences = append(next.OwnerReferences, owner.ControllerRef(api.ReplicaSetsResource, rs))
		rc.exp.AddCreations(key, 1)
		_, err := rc.api.UpdatePod(ctx, next)
		if err != nil {
			rc.exp.CreationObserved(key)
			if errdefs.IsConflict(err) || errdefs.IsNotFound(err) {
				continue
			}
			return adopted, fmt.Errorf("adopting pod %s: %w", p.Name, err)
		}
		adopted++
		log.WithFields(log.Fields{"replicaset": key, "pod": p.Name}).Info("adopted an orphan pod")
		events.Eventf(rc.events, rs, api.EventTypeNormal, "SuccessfulAdopt", "Adopted pod: %s", p.Name)
	}
	return adopted, nil
}

// slowStartBatch calls fn n times, in batches of 1, 2, 4, ... run at once,
// stopping after a batch with a failure, so that a ReplicaSet whose pods
// are refused costs one failed call, not n. It returns the successes.
func slowStartBatch(n int, fn func() error) (int, error) {
	done := 0
	for batch := 1; done < n; batch *= 2 {
		size := min(batch, n-done)
		errs := make([]error, size)
		var wg sync.WaitGroup
		for i := 0; i < size; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = fn()
			}()
		}
		wg.Wait()
		ok := 0
		for _, e := range errs {
			if e == nil {
				ok++
			}
		}
		done += ok
		if err := errors.Join(errs...); err != nil {
			return done, err
		}
	}
	return done, nil
}

// createPod creates one pod from the template, named <rs>-<5 random characters>.
func (rc *Controller) createPod(ctx context.Context, rs *api.ReplicaSet) error {
	for attempt := 0; ; attempt++ {
		pod := newPod(rs)
		_, err := rc.api.CreatePod(ctx, pod)
		if errdefs.IsAlreadyExists(err) && attempt < 3 {
			continue // the random name was taken
		}
		if err != nil {
			events.Eventf(rc.events, rs, api.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
			return fmt.Errorf("creating a pod of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		events.Eventf(rc.events, rs, api.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", pod.Name)
		return nil
	}
}

// maxBaseName keeps "<base>-xxxxx" within a name's 253 characters.
const maxBaseName = 253 - 6

func newPod(rs *api.ReplicaSet) *api.Pod {
	tmpl := cache.DeepCopy(rs).Spec.Template
	base := rs.Name
	if len(base) > maxBaseName {
		base = base[:maxBaseName]
	}
	return &api.Pod{
		ObjectMeta: api.ObjectMeta{
			Name:            names.Generate(base + "-"),
			Namespace:       rs.Namespace,
			Labels:          tmpl.Labels,
			Annotations:     tmpl.Annotations,
			OwnerReferences: []api.OwnerReference{owner.ControllerRef(api.ReplicaSetsResource, rs)},
		},
		Spec: tmpl.Spec,
	}
}

// podsToDelete picks the n pods that are cheapest to lose: unscheduled
// before scheduled, pending before running, not ready before ready, more
// restarts before fewer, newer before older.
func podsToDelete(pods []*api.Pod, n int) []*api.Pod {
	sorted := append([]*api.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool { return deleteFirst(sorted[i], sorted[j]) })
	return sorted[:min(n, len(sorted))]
}

func deleteFirst(a, b *api.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseRank(a), phaseRank(b); pa != pb {
		return pa < pb
	}
	if ra, rb := podstatus.IsReady(a), podstatus.IsReady(b); ra != rb {
		return !ra
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return ra > rb
	}
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if ta != nil && tb != nil && !ta.Equal(*tb) {
		return ta.After(*tb)
	}
	return a.Name > b.Name
}

func phaseRank(p *api.Pod) int {
	switch p.Status.Phase {
	case api.PodPending, "":
		return 0
	case api.PodUnknown:
		return 1
	}
	return 2
}

func restarts(p *api.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// computeStatus counts the active pods of a ReplicaSet at now; recheck,
// when not 0, is when a ready pod becomes available (minReadySeconds).
func computeStatus(rs *api.ReplicaSet, active []*api.Pod, now time.Time) (st api.ReplicaSetStatus, recheck time.Duration) {
	st = api.ReplicaSetStatus{Replicas: int32(len(active)), ObservedGeneration: rs.Generation}
	tmplSel := labels.SelectorFromSet(rs.Spec.Template.Labels)
	minReady := time.Duration(rs.Spec.MinReadySeconds) * time.Second
	for _, p := range active {
		if tmplSel.Matches(p.Labels) {
			st.FullyLabeledReplicas++
		}
		if !podstatus.IsReady(p) {
			continue
		}
		st.ReadyReplicas++
		switch ok, wait := podstatus.Available(p, minReady, now); {
		case ok:
			st.AvailableReplicas++
		case recheck == 0 || wait < recheck:
			recheck = wait
		}
	}
	return st, recheck
}

func (rc *Controller) updateStatus(ctx context.Context, rs *api.ReplicaSet, active []*api.Pod) error {
	st, recheck := computeStatus(rs, active, time.Now())
	if recheck > 0 {
		rc.queue.AddAfter(cache.Key(rs), recheck)
	}
	if st == rs.Status {
		return nil
	}
	up := cache.DeepCopy(rs)
	up.Status = st
	_, err := rc.api.UpdateReplicaSetStatus(ctx, up)
	if errdefs.IsConflict(err) {
		// Our cache is behind (often our own last status write): the
		// counts are right all the same, so write them on the current
		// version. ObservedGeneration stays the generation acted on.
		cur, gerr := rc.api.GetReplicaSet(ctx, rs.Namespace, rs.Name)
		if gerr != nil {
			err = gerr
		} else {
			cur.Status = st
			_, err = rc.api.UpdateReplicaSetStatus(ctx, cur)
		}
	}
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating status of replicaset %s: %w", cache.Key(rs), err)
	}
	return nil
}
