// Package endpoints keeps, for each Service with a selector, an Endpoints
// object of the same name listing the pods behind it: ready pods in
// addresses, the others in notReadyAddresses.
//
// Pods use their node's network and get their ports allocated per pod, so
// a Service's targetPort is resolved pod by pod and the port is carried on
// each address. There is one subset per service port; its ports list holds
// that service port (name, port, protocol).
package endpoints

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
	"minik8s/pkg/podstatus"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "endpoints"

// API is what the controller writes.
type API interface {
	CreateEndpoints(ctx context.Context, ep *api.Endpoints) (*api.Endpoints, error)
	UpdateEndpoints(ctx context.Context, ep *api.Endpoints) (*api.Endpoints, error)
	DeleteEndpoints(ctx context.Context, namespace, name, uid string) error
}

var _ API = clientAPI{}

type clientAPI struct{ c *client.Client }

func (a clientAPI) CreateEndpoints(ctx context.Context, ep *api.Endpoints) (*api.Endpoints, error) {
	return a.c.Endpoints(ep.Namespace).Create(ctx, ep)
}

func (a clientAPI) UpdateEndpoints(ctx context.Context, ep *api.Endpoints) (*api.Endpoints, error) {
	return a.c.Endpoints(ep.Namespace).Update(ctx, ep)
}

func (a clientAPI) DeleteEndpoints(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.Endpoints(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

// Controller is the endpoints controller.
type Controller struct {
	api       API
	services  *cache.Lister[api.Service, *api.Service]
	pods      *cache.Lister[api.Pod, *api.Pod]
	endpoints *cache.Lister[api.Endpoints, *api.Endpoints]
	queue     *workqueue.Queue
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory) *Controller {
	svcInf, podInf, epInf := f.Services(), f.Pods(), f.Endpoints()
	ec := &Controller{
		api:       clientAPI{c},
		services:  svcInf.Lister(),
		pods:      podInf.Lister(),
		endpoints: epInf.Lister(),
		queue:     workqueue.New(),
	}
	enqueue := func(s *api.Service) { ec.queue.Add(cache.Key(s)) }
	svcInf.AddEventHandler(cache.Handler[*api.Service]{
		OnAdd:    enqueue,
		OnUpdate: func(_, s *api.Service) { enqueue(s) },
		OnDelete: enqueue,
	})
	podInf.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd: func(p *api.Pod) { ec.enqueueServicesOf(p, nil) },
		OnUpdate: func(old, cur *api.Pod) {
			if old.ResourceVersion != cur.ResourceVersion {
				ec.enqueueServicesOf(cur, old)
			}
		},
		OnDelete: func(p *api.Pod) { ec.enqueueServicesOf(p, nil) },
	})
	// Someone else changing or deleting an Endpoints object is repaired.
	epInf.AddEventHandler(cache.Handler[*api.Endpoints]{
		OnUpdate: func(_, ep *api.Endpoints) { ec.queue.Add(cache.Key(ep)) },
		OnDelete: func(ep *api.Endpoints) { ec.queue.Add(cache.Key(ep)) },
		OnAdd:    func(ep *api.Endpoints) { ec.queue.Add(cache.Key(ep)) },
	})
	return ec
}

// Run syncs Endpoints until ctx ends.
func (ec *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, ec.queue, workers, Name, ec.sync)
}

// enqueueServicesOf queues the services selecting the pod now or before.
func (ec *Controller) enqueueServicesOf(cur, old *api.Pod) {
	for _, s := range ec.services.ListNamespace(cur.Namespace, nil) {
		if len(s.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		if sel.Matches(cur.Labels) || (old != nil && sel.Matches(old.Labels)) {
			ec.queue.Add(cache.Key(s))
		}
	}
}

// ownedBy reports whether this controller made ep for a Service (any uid).
func ownedBy(ep *api.Endpoints) *api.OwnerReference {
	for i := range ep.OwnerReferences {
		r := &ep.OwnerReferences[i]
		if r.Kind == api.ServicesResource.Kind && r.Controller != nil && *r.Controller {
			return r
		}
	}
	return nil
}

func (ec *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	cur, haveEP := ec.endpoints.Get(ns, name)
	svc, ok := ec.services.Get(ns, name)
	if !ok {
		// Remove what was made for a Service that is gone; Endpoints
		// someone wrote by hand are theirs.
		if haveEP && ownedBy(cur) != nil {
			err := ec.api.DeleteEndpoints(ctx, ns, name, cur.UID)
			if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
				return fmt.Errorf("deleting endpoints %s: %w", key, err)
			}
		}
		return nil
	}
	if len(svc.Spec.Selector) == 0 || svc.DeletionTimestamp != nil {
		// A Service without selector has its Endpoints written by hand;
		// one being deleted (in the foreground) gets none made again.
		return nil
	}
	pods := ec.pods.ListNamespace(ns, labels.SelectorFromSet(svc.Spec.Selector))
	subsets := Subsets(svc, pods)
	yes := true
	owner := []api.OwnerReference{{APIVersion: api.ServicesResource.GroupVersion(), Kind: api.ServicesResource.Kind,
		Name: svc.Name, UID: svc.UID, Controller: &yes}}
	if !haveEP {
		ep := &api.Endpoints{
			ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns, Labels: svc.Labels, OwnerReferences: owner},
			Subsets:    subsets,
		}
		if _, err := ec.api.CreateEndpoints(ctx, ep); err != nil {
			// AlreadyExists: the cache lags; the retry sees the object.
			return fmt.Errorf("creating endpoints %s: %w", key, err)
		}
		log.WithFields(log.Fields{"service": key, "addresses": countAddresses(subsets)}).Debug("created endpoints")
		return nil
	}
	if cache.Equal(cur.Subsets, subsets) && cache.Equal(cur.OwnerReferences, owner) {
		return nil
	}
	up := cache.DeepCopy(cur)
	up.Subsets, up.OwnerReferences = subsets, owner
	if _, err := ec.api.UpdateEndpoints(ctx, up); err != nil {
		if errdefs.IsNotFound(err) {
			return nil // deleted meanwhile: its delete event brings us back
		}
		return fmt.Errorf("updating endpoints %s: %w", key, err)
	}
	log.WithFields(log.Fields{"service": key, "addresses": countAddresses(subsets)}).Debug("updated endpoints")
	return nil
}

func countAddresses(ss []api.EndpointSubset) int {
	n := 0
	for _, s := range ss {
		n += len(s.Addresses)
	}
	return n
}

// Subsets lists the pods serving each port of the Service: one subset per
// service port, each address carrying the pod's own target port. Pods
// without an IP, being deleted or terminated are left out, as are pods
// on which a named target port cannot be resolved; pods not ready are in
// notReadyAddresses unless the Service publishes them.
func Subsets(svc *api.Service, pods []*api.Pod) []api.EndpointSubset {
	sorted := append([]*api.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var out []api.EndpointSubset
	for _, sp := range svc.Spec.Ports {
		var sub api.EndpointSubset
		for _, p := range sorted {
			if p.Status.PodIP == "" || p.DeletionTimestamp != nil ||
				p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed {
				continue
			}
			port, ok := TargetPort(sp, p)
			if !ok {
				continue
			}
			addr := api.EndpointAddress{IP: p.Status.PodIP, Port: port, NodeName: p.Spec.NodeName,
				TargetRef: &api.ObjectReference{Kind: api.PodsResource.Kind, Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
			if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name && p.Namespace == svc.Namespace {
				addr.Hostname = p.Spec.Hostname // as Kubernetes: the pod's name under the Service
			}
			// A Service that publishes pods not ready (a StatefulSet's
			// peers finding each other) lists them as ready.
			if podstatus.IsReady(p) || svc.Spec.PublishNotReadyAddresses {
				sub.Addresses = append(sub.Addresses, addr)
			} else {
				sub.NotReadyAddresses = append(sub.NotReadyAddresses, addr)
			}
		}
		if len(sub.Addresses) == 0 && len(sub.NotReadyAddresses) == 0 {
			continue
		}
		protocol := sp.Protocol
		if protocol == "" {
			protocol = "TCP"
		}
		sub.Ports = []api.EndpointPort{{Name: sp.Name, Port: sp.Port, Protocol: protocol}}
		out = append(out, sub)
	}
	return out
}

// TargetPort resolves a service port's targetPort on one pod: a number is
// used as it is; a name is looked up among the ports the pod's containers
// were given (status), then among those declared in its spec.
func TargetPort(sp api.ServicePort, p *api.Pod) (int32, bool) {
	tp := string(sp.TargetPort)
	if tp == "" {
		return sp.Port, sp.Port > 0
	}
	if n, err := strconv.ParseInt(tp, 10, 32); err == nil {
		if n < 1 || n > 65535 {
			return 0, false
		}
		return int32(n), true
	}
	for _, cs := range p.Status.ContainerStatuses {
		for _, cp := range cs.Ports {
			if cp.Name != tp {
				continue
			}
			if cp.ContainerPort > 0 {
				return cp.ContainerPort, true
			}
			if cp.HostPort > 0 {
				return cp.HostPort, true
			}
		}
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == tp && cp.ContainerPort > 0 {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}
