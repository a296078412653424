// Package namespace empties a namespace being deleted, as Kubernetes'
// namespace controller does: it deletes every object in it, waits until
// they are gone (pods finish their graceful stop), then removes its
// finalizer, and the apiserver removes the namespace; the objects of
// custom kinds go too. It also gives every namespace its default
// ServiceAccount.
package namespace

import (
	"context"
	"fmt"
	"slices"
	"time"

	log "github.com/sirupsen/logrus"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "namespace"

// recheck is how soon a namespace still holding objects is looked at again.
const recheck = time.Second

// Controller is the namespace controller.
type Controller struct {
	c          *client.Client
	namespaces *cache.Lister[api.Namespace, *api.Namespace]
	accounts   *cache.Lister[api.ServiceAccount, *api.ServiceAccount]
	queue      *workqueue.Queue
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory) *Controller {
	nsInf, saInf := f.Namespaces(), f.ServiceAccounts()
	ctl := &Controller{c: c, namespaces: nsInf.Lister(), accounts: saInf.Lister(), queue: workqueue.New()}
	enqueue := func(ns *api.Namespace) { ctl.queue.Add(ns.Name) }
	nsInf.AddEventHandler(cache.Handler[*api.Namespace]{
		OnAdd: enqueue, OnUpdate: func(_, ns *api.Namespace) { enqueue(ns) },
	})
	// A default ServiceAccount deleted by hand comes back.
	saInf.AddEventHandler(cache.Handler[*api.ServiceAccount]{
		OnDelete: func(sa *api.ServiceAccount) { ctl.queue.Add(sa.Namespace) },
	})
	return ctl
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, c.queue, workers, Name, c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	ns, ok := c.namespaces.Get("", name)
	if !ok {
		return nil
	}
	if ns.DeletionTimestamp == nil {
		return c.ensureDefaultAccount(ctx, ns)
	}
	if !slices.Contains(ns.Spec.Finalizers, api.FinalizerKubernetes) {
		return nil
	}
	left, err := c.empty(ctx, name)
	if err != nil {
		return err
	}
	if left > 0 {
		log.WithFields(log.Fields{"namespace": name, "left": left}).Debug("namespace: waiting for its objects to go")
		c.queue.AddAfter(name, recheck)
		return nil
	}
	fin := *ns
	fin.Spec.Finalizers = slices.DeleteFunc(slices.Clone(ns.Spec.Finalizers), func(f string) bool { return f == api.FinalizerKubernetes })
	if err := c.c.Do(ctx, "PUT", api.NamespacesResource.Path("", name)+"/finalize", &fin, nil); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("finalizing namespace %s: %w", name, err)
	}
	log.WithField("namespace", name).Info("namespace emptied and removed")
	return nil
}

// empty deletes what is left in namespace ns and says how many objects
// were still there.
func (c *Controller) empty(ctx context.Context, ns string) (int, error) {
	left := 0
	custom, err := c.customResources(ctx)
	if err != nil {
		return 0, err
	}
	for _, res := range append(slices.Clone(api.Resources), custom...) {
		if !res.Namespaced {
			continue
		}
		objs, _, err := c.c.Resource(res, ns).List(ctx, client.ListOptions{})
		if res.Custom && errdefs.IsNotFound(err) {
			continue // a definition not (or no longer) served
		}
		if err != nil {
			return 0, fmt.Errorf("listing %s in %s: %w", res.Name, ns, err)
		}
		for _, o := range objs {
			left++
			if o.GetObjectMeta().DeletionTimestamp != nil {
				continue // on its way (a pod stopping gracefully)
			}
			_, err := c.c.Resource(res, ns).Delete(ctx, o.GetObjectMeta().Name, client.DeleteOptions{UID: o.GetObjectMeta().UID})
			if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
				return 0, fmt.Errorf("deleting %s %s/%s: %w", res.Kind, ns, o.GetObjectMeta().Name, err)
			}
		}
	}
	return left, nil
}

// customResources are the kinds of the CustomResourceDefinitions: their
// objects go with their namespace too, as Kubernetes' namespace
// controller finds every kind served through discovery. One served
// version lists a kind's objects of every version.
func (c *Controller) customResources(ctx context.Context) ([]api.Resource, error) {
	crds, _, err := c.c.Resource(api.CustomResourceDefinitionsResource, "").List(ctx, client.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	var out []api.Resource
	for _, o := range crds {
		crd := o.(*api.CustomResourceDefinition)
		names := crd.Status.AcceptedNames
		if names.Plural == "" {
			continue // not served
		}
		res := api.Resource{Name: names.Plural, Kind: names.Kind, Group: crd.Spec.Group, Custom: true,
			Namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped, New: func() api.Object { return &api.CustomObject{} }}
		for _, v := range crd.Spec.Versions {
			if v.Served && (res.Version == "" || v.Storage) {
				res.Version = v.Name
			}
		}
		if res.Version != "" {
			out = append(out, res)
		}
	}
	return out, nil
}

func (c *Controller) ensureDefaultAccount(ctx context.Context, ns *api.Namespace) error {
	if _, ok := c.accounts.Get(ns.Name, api.DefaultServiceAccount); ok {
		return nil
	}
	sa := &api.ServiceAccount{ObjectMeta: api.ObjectMeta{Name: api.DefaultServiceAccount, Namespace: ns.Name}}
	_, err := c.c.ServiceAccounts(ns.Name).Create(ctx, sa)
	if err != nil && !errdefs.IsAlreadyExists(err) && !errdefs.IsForbidden(err) {
		return fmt.Errorf("default service account of %s: %w", ns.Name, err)
	}
	return nil
}
