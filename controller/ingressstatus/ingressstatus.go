// Package ingressstatus reports where each Ingress of minik8s's ingress
// controller is served: status.loadBalancer.ingress lists the addresses of
// the ready nodes whose kubelets serve Ingresses (their Node's
// api.AnnotationIngressPorts), as k3s's Traefik reports its service load
// balancer's node addresses. The kubelets serve; this controller is the
// one writer of the status, so that nodes do not fight over it.
package ingressstatus

import (
	"context"
	"slices"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
	"minik8s/pkg/nodecondition"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "ingressstatus"

// Controller writes the Ingresses' status.
type Controller struct {
	c         *client.Client
	ingresses *cache.Lister[api.Ingress, *api.Ingress]
	classes   *cache.Lister[api.IngressClass, *api.IngressClass]
	nodes     *cache.Lister[api.Node, *api.Node]
	queue     *workqueue.Queue
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory) *Controller {
	ingInf, classInf, nodeInf := f.Ingresses(), f.IngressClasses(), f.Nodes()
	ic := &Controller{c: c, ingresses: ingInf.Lister(), classes: classInf.Lister(), nodes: nodeInf.Lister(), queue: workqueue.New()}
	ingInf.AddEventHandler(cache.Handler[*api.Ingress]{
		OnAdd:    func(i *api.Ingress) { ic.queue.Add(cache.Key(i)) },
		OnUpdate: func(_, i *api.Ingress) { ic.queue.Add(cache.Key(i)) },
	})
	all := func() {
		for _, i := range ic.ingresses.List(labels.Selector{}) {
			ic.queue.Add(cache.Key(i))
		}
	}
	classInf.AddEventHandler(cache.Handler[*api.IngressClass]{
		OnAdd: func(*api.IngressClass) { all() }, OnUpdate: func(_, _ *api.IngressClass) { all() }, OnDelete: func(*api.IngressClass) { all() },
	})
	nodeInf.AddEventHandler(cache.Handler[*api.Node]{
		OnAdd: func(*api.Node) { all() },
		OnUpdate: func(old, cur *api.Node) {
			if !slices.Equal(Addresses([]*api.Node{old}), Addresses([]*api.Node{cur})) {
				all()
			}
		},
		OnDelete: func(*api.Node) { all() },
	})
	return ic
}

// Run writes statuses until ctx ends.
func (ic *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, ic.queue, workers, Name, ic.sync)
}

// Addresses are the sorted InternalIPs of the ready nodes that serve
// Ingresses.
func Addresses(nodes []*api.Node) []string {
	var out []string
	for _, n := range nodes {
		if n.Annotations[api.AnnotationIngressPorts] == "" || nodecondition.ReadyStatus(n) != api.ConditionTrue {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == api.NodeInternalIP && a.Address != "" {
				out = append(out, a.Address)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (ic *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	ing, ok := ic.ingresses.Get(ns, name)
	if !ok {
		return nil
	}
	if !ic.ours(ing) {
		return nil // another controller's Ingress: its status is that controller's
	}
	var want []api.IngressLoadBalancerIngress
	for _, ip := range Addresses(ic.nodes.List(labels.Selector{})) {
		want = append(want, api.IngressLoadBalancerIngress{IP: ip})
	}
	if cache.Equal(want, ing.Status.LoadBalancer.Ingress) || (len(want) == 0 && len(ing.Status.LoadBalancer.Ingress) == 0) {
		return nil
	}
	up := cache.DeepCopy(ing)
	up.Status.LoadBalancer.Ingress = want
	_, err := ic.c.Ingresses(ns).UpdateStatus(ctx, up)
	if errdefs.IsConflict(err) || errdefs.IsNotFound(err) {
		ic.queue.Add(key)
		return nil
	}
	return err
}

// ours: the Ingress names a class of minik8s's controller, or none.
func (ic *Controller) ours(ing *api.Ingress) bool {
	if ing.Spec.IngressClassName == nil {
		return true
	}
	c, ok := ic.classes.Get("", *ing.Spec.IngressClassName)
	return ok && c.Spec.Controller == api.IngressController
}
