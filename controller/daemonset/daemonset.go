// Package daemonset runs one pod of each DaemonSet on every node its
// template fits, as Kubernetes' daemon controller does: it creates the pod
// of a node (held to that node by its affinity; the scheduler binds it),
// deletes pods of nodes that no longer fit or are gone, replaces pods of
// older templates by the set's update strategy, records each template as
// a ControllerRevision (kubectl rollout history and undo) and reports the
// counts kubectl rollout status reads.
package daemonset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/expectations"
	"minik8s/pkg/labels"
	"minik8s/pkg/owner"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "daemonset"

// labelsAll selects everything.
var labelsAll = labels.Selector{}

// API is what the controller writes.
type API interface {
	CreatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error)
	DeletePod(ctx context.Context, namespace, name, uid string) error
	GetDaemonSet(ctx context.Context, namespace, name string) (*api.DaemonSet, error)
	UpdateDaemonSetStatus(ctx context.Context, ds *api.DaemonSet) (*api.DaemonSet, error)
	CreateRevision(ctx context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error)
	GetRevision(ctx context.Context, namespace, name string) (*api.ControllerRevision, error)
	UpdateRevision(ctx context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error)
	DeleteRevision(ctx context.Context, namespace, name, uid string) error
}

type clientAPI struct{ c *client.Client }

func (a clientAPI) CreatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error) {
	return a.c.Pods(pod.Namespace).Create(ctx, pod)
}

func (a clientAPI) DeletePod(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.Pods(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

func (a clientAPI) GetDaemonSet(ctx context.Context, ns, name string) (*api.DaemonSet, error) {
	return a.c.DaemonSets(ns).Get(ctx, name)
}

func (a clientAPI) UpdateDaemonSetStatus(ctx context.Context, ds *api.DaemonSet) (*api.DaemonSet, error) {
	return a.c.DaemonSets(ds.Namespace).UpdateStatus(ctx, ds)
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

// Controller is the DaemonSet controller.
type Controller struct {
	api    API
	dss    *cache.Lister[api.DaemonSet, *api.DaemonSet]
	nodes  *cache.Lister[api.Node, *api.Node]
	pods   *cache.Lister[api.Pod, *api.Pod]
	revs   *cache.Lister[api.ControllerRevision, *api.ControllerRevision]
	queue  *workqueue.Queue
	exp    *expectations.Expectations
	events events.EventRecorder
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory, rec events.EventRecorder) *Controller {
	dsInf, nodeInf, podInf, revInf := f.DaemonSets(), f.Nodes(), f.Pods(), f.ControllerRevisions()
	dc := &Controller{api: clientAPI{c}, dss: dsInf.Lister(), nodes: nodeInf.Lister(), pods: podInf.Lister(),
		revs: revInf.Lister(), queue: workqueue.New(), exp: expectations.New(), events: rec}
	dsInf.AddEventHandler(cache.Handler[*api.DaemonSet]{
		OnAdd:    func(ds *api.DaemonSet) { dc.queue.Add(cache.Key(ds)) },
		OnUpdate: func(_, ds *api.DaemonSet) { dc.queue.Add(cache.Key(ds)) },
		OnDelete: func(ds *api.DaemonSet) {
			dc.exp.Forget(cache.Key(ds))
			dc.queue.Add(cache.Key(ds))
		},
	})
	// A node joining, leaving, or changing what decides placement (its
	// labels, taints, cordon) may change every set's pods.
	nodeInf.AddEventHandler(cache.Handler[*api.Node]{
		OnAdd: func(*api.Node) { dc.enqueueAll() },
		OnUpdate: func(old, cur *api.Node) {
			if !maps.Equal(old.Labels, cur.Labels) || !reflect.DeepEqual(old.Spec, cur.Spec) {
				dc.enqueueAll()
			}
		},
		OnDelete: func(*api.Node) { dc.enqueueAll() },
	})
	podInf.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd: func(p *api.Pod) {
			if key, ok := dc.owner(p); ok {
				dc.exp.CreationObserved(key)
				dc.queue.Add(key)
			}
		},
		OnUpdate: func(old, cur *api.Pod) {
			key, ok := dc.owner(cur)
			if !ok {
				return
			}
			if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
				dc.exp.DeletionObserved(key, cur.UID)
			}
			dc.queue.Add(key)
		},
		OnDelete: func(p *api.Pod) {
			if key, ok := dc.owner(p); ok {
				dc.exp.DeletionObserved(key, p.UID)
				dc.queue.Add(key)
			}
		},
	})
	return dc
}

// Run syncs DaemonSets until ctx ends.
func (dc *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, dc.queue, workers, Name, dc.sync)
}

func (dc *Controller) enqueueAll() {
	for _, ds := range dc.dss.List(labelsAll) {
		dc.queue.Add(cache.Key(ds))
	}
}

func (dc *Controller) owner(p *api.Pod) (string, bool) {
	return owner.ControllerKey(&p.ObjectMeta, api.DaemonSetsResource.Kind)
}

func (dc *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	ds, ok := dc.dss.Get(ns, name)
	if !ok {
		dc.exp.Forget(key)
		return nil
	}
	sel, err := labels.FromLabelSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() {
		// The apiserver validates selectors; nothing to do but say so.
		log.WithError(err).WithField("daemonset", key).Warn("invalid selector")
		return nil
	}
	var pods []*api.Pod
	for _, p := range dc.pods.ListNamespace(ns, sel) {
		if owner.IsControlledBy(&p.ObjectMeta, ds.UID) {
			pods = append(pods, p)
		}
	}
	h := dc.history(ds)
	revs := h.Revisions(dc.revs.ListNamespace(ds.Namespace, labelsAll))
	hash, err := h.Current(ctx, revs)
	if err != nil {
		return err
	}
	v := newView(ds, hash, dc.nodes.List(labelsAll), pods, time.Now())
	var pl plan
	var actErr error
	// A set being deleted (in the foreground) makes no more pods.
	if dc.exp.Satisfied(key) && ds.DeletionTimestamp == nil {
		pl = v.manage()
		if len(pl.create) == 0 && len(pl.delete) == 0 && ds.Spec.UpdateStrategy.Type == api.DaemonSetRollingUpdate {
			pl = v.rollingUpdate()
		}
		actErr = dc.act(ctx, key, ds, hash, pl)
		if actErr == nil {
			actErr = h.Prune(ctx, revs, pods, hash)
		}
	}
	st := v.status(&pl)
	if pl.recheck > 0 {
		dc.queue.AddAfter(key, pl.recheck)
	}
	return errors.Join(actErr, dc.updateStatus(ctx, ds, st))
}

// act creates and deletes the plan's pods, all at once.
func (dc *Controller) act(ctx context.Context, key string, ds *api.DaemonSet, hash string, pl plan) error {
	if len(pl.create) == 0 && len(pl.delete) == 0 {
		return nil
	}
	uids := make([]string, len(pl.delete))
	for i, p := range pl.delete {
		uids[i] = p.UID
	}
	dc.exp.AddCreations(key, len(pl.create))
	dc.exp.ExpectDeletions(key, uids)
	log.WithFields(log.Fields{"daemonset": key, "create": len(pl.create), "delete": len(pl.delete)}).Info("syncing daemon pods")
	var wg sync.WaitGroup
	errs := make([]error, len(pl.create)+len(pl.delete))
	for i, node := range pl.create {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod := newPod(ds, hash, node)
			if _, err := dc.api.CreatePod(ctx, pod); err != nil {
				dc.exp.CreationObserved(key) // it will never be seen
				events.Eventf(dc.events, ds, api.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
				errs[i] = fmt.Errorf("creating the pod of node %s: %w", node, err)
				return
			}
			events.Eventf(dc.events, ds, api.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", pod.Name)
		}()
	}
	for i, p := range pl.delete {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := dc.api.DeletePod(ctx, p.Namespace, p.Name, p.UID)
			if err != nil && !errdefs.IsNotFound(err) {
				dc.exp.DeletionObserved(key, p.UID)
				errs[len(pl.create)+i] = fmt.Errorf("deleting pod %s: %w", p.Name, err)
				return
			}
			events.Eventf(dc.events, ds, api.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (dc *Controller) updateStatus(ctx context.Context, ds *api.DaemonSet, st api.DaemonSetStatus) error {
	if reflect.DeepEqual(st, ds.Status) {
		return nil
	}
	up := cache.DeepCopy(ds)
	up.Status = st
	_, err := dc.api.UpdateDaemonSetStatus(ctx, up)
	if errdefs.IsConflict(err) {
		// The cache is behind (often our own last write): the counts
		// are right all the same; write them on the current version.
		cur, gerr := dc.api.GetDaemonSet(ctx, ds.Namespace, ds.Name)
		if gerr != nil {
			err = gerr
		} else {
			st.CollisionCount = cur.Status.CollisionCount
			cur.Status = st
			_, err = dc.api.UpdateDaemonSetStatus(ctx, cur)
		}
	}
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating status of daemonset %s: %w", cache.Key(ds), err)
	}
	return nil
}
