// Package disruption is the disruption controller: it keeps each
// PodDisruptionBudget's status (the pods it expects, those healthy, how
// many it needs healthy, and so how many evictions it allows now), which
// the apiserver's eviction subresource reads and takes from, as
// Kubernetes' disruption controller does.
package disruption

import (
	"context"
	"fmt"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/budget"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
	"minik8s/pkg/owner"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "disruption"

// DeletionTimeout is how long an evicted pod counts as going: one not
// deleted by then is taken as staying, as Kubernetes' controller takes it.
const DeletionTimeout = 2 * time.Minute

// Controller keeps the budgets' status.
type Controller struct {
	c           *client.Client
	budgets     *cache.Lister[api.PodDisruptionBudget, *api.PodDisruptionBudget]
	pods        *cache.Lister[api.Pod, *api.Pod]
	replicaSets *cache.Lister[api.ReplicaSet, *api.ReplicaSet]
	deployments *cache.Lister[api.Deployment, *api.Deployment]
	queue       *workqueue.Queue
	now         func() time.Time
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory) *Controller {
	pdbInf, podInf, rsInf, dInf := f.PodDisruptionBudgets(), f.Pods(), f.ReplicaSets(), f.Deployments()
	dc := &Controller{c: c, budgets: pdbInf.Lister(), pods: podInf.Lister(), replicaSets: rsInf.Lister(),
		deployments: dInf.Lister(), queue: workqueue.New(), now: time.Now}
	pdbInf.AddEventHandler(cache.Handler[*api.PodDisruptionBudget]{
		OnAdd:    func(p *api.PodDisruptionBudget) { dc.queue.Add(cache.Key(p)) },
		OnUpdate: func(_, p *api.PodDisruptionBudget) { dc.queue.Add(cache.Key(p)) },
	})
	podInf.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd: dc.podChanged,
		OnUpdate: func(old, cur *api.Pod) {
			dc.podChanged(old) // a pod whose labels changed leaves a budget
			dc.podChanged(cur)
		},
		OnDelete: dc.podChanged,
	})
	// The expected count follows a controller's scale.
	rsInf.AddEventHandler(cache.Handler[*api.ReplicaSet]{
		OnUpdate: func(_, rs *api.ReplicaSet) { dc.namespaceChanged(rs.Namespace) },
	})
	dInf.AddEventHandler(cache.Handler[*api.Deployment]{
		OnUpdate: func(_, d *api.Deployment) { dc.namespaceChanged(d.Namespace) },
	})
	return dc
}

func (dc *Controller) podChanged(p *api.Pod) {
	for _, pdb := range dc.budgets.ListNamespace(p.Namespace, labels.Selector{}) {
		if budget.Selects(pdb, p) {
			dc.queue.Add(cache.Key(pdb))
		}
	}
}

func (dc *Controller) namespaceChanged(ns string) {
	for _, pdb := range dc.budgets.ListNamespace(ns, labels.Selector{}) {
		dc.queue.Add(cache.Key(pdb))
	}
}

// Run keeps statuses until ctx ends.
func (dc *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, dc.queue, workers, Name, dc.sync)
}

func (dc *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	pdb, ok := dc.budgets.Get(ns, name)
	if !ok {
		return nil
	}
	var pods []*api.Pod
	for _, p := range dc.pods.ListNamespace(ns, labels.Selector{}) {
		if budget.Selects(pdb, p) {
			pods = append(pods, p)
		}
	}
	now := dc.now()
	want, recheck, err := Status(pdb, pods, dc.scaleOf, now)
	if err != nil {
		log.WithError(err).WithField("poddisruptionbudget", key).Warn("disruption budget: allowing no disruption")
	}
	if recheck > 0 {
		dc.queue.AddAfter(key, recheck)
	}
	if cache.Equal(want, pdb.Status) {
		return nil
	}
	up := cache.DeepCopy(pdb)
	up.Status = want
	_, err = dc.c.PodDisruptionBudgets(ns).UpdateStatus(ctx, up)
	if errdefs.IsConflict(err) || errdefs.IsNotFound(err) {
		// An eviction took from the budget meanwhile: read it again.
		dc.queue.Add(key)
		return nil
	}
	return err
}

// scaleOf is the replicas the pod's controller wants, by the controller's
// key ("ReplicaSet/ns/name"): a Deployment's for its ReplicaSets' pods.
func (dc *Controller) scaleOf(p *api.Pod, ref *api.OwnerReference) (string, int32, error) {
	if ref.Kind != "ReplicaSet" {
		return "", 0, fmt.Errorf("pod %s/%s: its controller %s %s has no scale minik8s can read "+
			"(a budget in percentages or maxUnavailable covers the pods of Deployments and ReplicaSets)", p.Namespace, p.Name, ref.Kind, ref.Name)
	}
	rs, ok := dc.replicaSets.Get(p.Namespace, ref.Name)
	if !ok || rs.UID != ref.UID {
		return "", 0, fmt.Errorf("pod %s/%s: found no controllers (ReplicaSet %s)", p.Namespace, p.Name, ref.Name)
	}
	if dref := owner.ControllerOf(&rs.ObjectMeta); dref != nil && dref.Kind == "Deployment" {
		d, ok := dc.deployments.Get(p.Namespace, dref.Name)
		if !ok || d.UID != dref.UID {
			return "", 0, fmt.Errorf("pod %s/%s: found no controllers (Deployment %s)", p.Namespace, p.Name, dref.Name)
		}
		return "Deployment/" + string(d.UID), replicas(d.Spec.Replicas), nil
	}
	return "ReplicaSet/" + string(rs.UID), replicas(rs.Spec.Replicas), nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
