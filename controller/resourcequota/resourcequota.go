// Package resourcequota reports what each ResourceQuota's namespace uses
// (status.used, beside status.hard), as Kubernetes' quota controller does.
// It enforces nothing: the apiserver admits each create against the
// quotas, counting from the store; this is what kubectl describe quota
// shows.
package resourcequota

import (
	"context"
	"fmt"
	"maps"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
	"minik8s/pkg/quota"
	"minik8s/pkg/wait"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "resourcequota"

// resync is how often every quota is counted again: pods are followed
// as they change, the other kinds are counted this often.
const resync = 10 * time.Second

// Controller is the quota controller.
type Controller struct {
	c      *client.Client
	quotas *cache.Lister[api.ResourceQuota, *api.ResourceQuota]
	pods   *cache.Lister[api.Pod, *api.Pod]
	queue  *workqueue.Queue
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory) *Controller {
	qInf, podInf := f.ResourceQuotas(), f.Pods()
	rc := &Controller{c: c, quotas: qInf.Lister(), pods: podInf.Lister(), queue: workqueue.New()}
	qInf.AddEventHandler(cache.Handler[*api.ResourceQuota]{
		OnAdd:    func(q *api.ResourceQuota) { rc.queue.Add(cache.Key(q)) },
		OnUpdate: func(_, q *api.ResourceQuota) { rc.queue.Add(cache.Key(q)) },
	})
	podInf.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd: func(p *api.Pod) { rc.enqueueNamespace(p.Namespace) },
		OnUpdate: func(old, cur *api.Pod) {
			if old.Status.Phase != cur.Status.Phase {
				rc.enqueueNamespace(cur.Namespace)
			}
		},
		OnDelete: func(p *api.Pod) { rc.enqueueNamespace(p.Namespace) },
	})
	return rc
}

// Run counts quotas until ctx ends.
func (rc *Controller) Run(ctx context.Context, workers int) {
	go wait.Every(ctx, resync, func() {
		for _, q := range rc.quotas.List(labels.Selector{}) {
			rc.queue.Add(cache.Key(q))
		}
	})
	workqueue.Run(ctx, rc.queue, workers, Name, rc.sync)
}

func (rc *Controller) enqueueNamespace(ns string) {
	for _, q := range rc.quotas.ListNamespace(ns, labels.Selector{}) {
		rc.queue.Add(cache.Key(q))
	}
}

func (rc *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	q, ok := rc.quotas.Get(ns, name)
	if !ok {
		return nil
	}
	kinds := map[string]api.Resource{}
	for res := range q.Spec.Hard {
		for _, k := range quota.Kinds(res) {
			kinds[k.Name+"."+k.Group] = k
		}
	}
	used := quota.Usage{}
	for _, res := range kinds {
		if res.Name == api.PodsResource.Name && res.Group == "" {
			for _, p := range rc.pods.ListNamespace(ns, labels.Selector{}) {
				used.Add(quota.Of(q, res, p))
			}
			continue
		}
		objs, _, err := rc.c.Resource(res, ns).List(ctx, client.ListOptions{})
		if err != nil {
			return fmt.Errorf("counting %s for quota %s: %w", res.Name, key, err)
		}
		for _, o := range objs {
			used.Add(quota.Of(q, res, o))
		}
	}
	st := api.ResourceQuotaStatus{Hard: maps.Clone(q.Spec.Hard), Used: api.ResourceList{}}
	for res := range q.Spec.Hard {
		v := used[res]
		st.Used[res] = v.String()
	}
	if maps.Equal(st.Hard, q.Status.Hard) && maps.Equal(st.Used, q.Status.Used) {
		return nil
	}
	up := cache.DeepCopy(q)
	up.Status = st
	_, err := rc.c.ResourceQuotas(ns).UpdateStatus(ctx, up)
	if errdefs.IsConflict(err) || errdefs.IsNotFound(err) {
		rc.queue.Add(key) // counted again on the newer version, if any
		return nil
	}
	return err
}
