// Package garbagecollector deletes objects whose owners are gone: an
// object with ownerReferences none of which names an existing object (by
// uid) is deleted. Deleting a ReplicaSet thus deletes its pods, deleting a
// Service its Endpoints, and deleting a function what was made for it.
package garbagecollector

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "garbagecollector"

// ownerIndex indexes objects by the uids of their owners.
const ownerIndex = "garbagecollector/owner"

// sweepPeriod is how often every owned object is checked, besides the
// checks that owner deletions trigger.
const sweepPeriod = time.Minute

// kind is one resource the collector follows, as owner and as dependent.
type kind interface {
	resource() api.Resource
	get(namespace, name string) (api.Object, bool)
	owned() []api.Object
	byOwner(uid string) []api.Object
}

type informerKind[T any, PT client.Object[T]] struct {
	res api.Resource
	l   *cache.Lister[T, PT]
}

func (k informerKind[T, PT]) resource() api.Resource { return k.res }

func (k informerKind[T, PT]) get(ns, name string) (api.Object, bool) {
	obj, ok := k.l.Get(ns, name)
	return obj, ok
}

func (k informerKind[T, PT]) owned() []api.Object {
	var out []api.Object
	for _, o := range k.l.List(nil) {
		if len(o.GetObjectMeta().OwnerReferences) > 0 {
			out = append(out, o)
		}
	}
	return out
}

func (k informerKind[T, PT]) byOwner(uid string) []api.Object {
	objs := k.l.ByIndex(ownerIndex, uid)
	out := make([]api.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// Getter reads any object from the apiserver (a *client.Client is one).
type Getter interface {
	Do(ctx context.Context, method, path string, in, out any) error
}

var _ Getter = (*client.Client)(nil)

// Controller is the garbage collector.
type Controller struct {
	c     Getter
	kinds map[string]kind
	queue *workqueue.Queue
}

// New returns the collector following pods, replicasets, deployments,
// daemonsets, statefulsets, controllerrevisions, ingresses, networkpolicies, poddisruptionbudgets,
// jobs, cronjobs, services, endpoints, configmaps, persistentvolumeclaims, funcs, funcrevisions
// and triggers
// through the factory's informers.
func New(c *client.Client, f *cache.Factory) *Controller {
	gc := &Controller{c: c, kinds: map[string]kind{}, queue: workqueue.New()}
	follow(gc, api.PodsResource, f.Pods())
	follow(gc, api.ReplicaSetsResource, f.ReplicaSets())
	follow(gc, api.DeploymentsResource, f.Deployments())
	follow(gc, api.DaemonSetsResource, f.DaemonSets())
	follow(gc, api.StatefulSetsResource, f.StatefulSets())
	follow(gc, api.ControllerRevisionsResource, f.ControllerRevisions())
	follow(gc, api.IngressesResource, f.Ingresses())
	follow(gc, api.PodDisruptionBudgetsResource, f.PodDisruptionBudgets())
	follow(gc, api.NetworkPoliciesResource, f.NetworkPolicies())
	follow(gc, api.JobsResource, f.Jobs())
	follow(gc, api.CronJobsResource, f.CronJobs())
	follow(gc, api.ServicesResource, f.Services())
	follow(gc, api.EndpointsResource, f.Endpoints())
	follow(gc, api.ConfigMapsResource, f.ConfigMaps())
	// A StatefulSet's claims, owned by the set or by a pod it scaled away
	// under a Delete retention policy.
	follow(gc, api.PersistentVolumeClaimsResource, f.PersistentVolumeClaims())
	follow(gc, api.FuncsResource, f.Funcs())
	follow(gc, api.FuncRevisionsResource, f.FuncRevisions())
	follow(gc, api.TriggersResource, f.Triggers())
	return gc
}

// follow adds a resource: its owned objects are checked when they change
// and when an owner of theirs is deleted; its deletions trigger checks of
// what they owned.
func follow[T any, PT client.Object[T]](gc *Controller, res api.Resource, inf *cache.Informer[T, PT]) {
	inf.AddIndexer(ownerIndex, func(o PT) []string {
		refs := o.GetObjectMeta().OwnerReferences
		uids := make([]string, len(refs))
		for i, r := range refs {
			uids[i] = r.UID
		}
		return uids
	})
	gc.kinds[res.Name] = informerKind[T, PT]{res: res, l: inf.Lister()}
	check := func(o PT) {
		meta := o.GetObjectMeta()
		if len(meta.OwnerReferences) > 0 {
			gc.queue.Add(itemKey(res, o))
		}
		if foregroundDeleting(meta) {
			// Its dependents go first, then its finalizer.
			gc.ownerDeleted(meta.UID)
			gc.queue.Add(ownerKey(res, meta.Namespace, meta.Name))
		}
	}
	inf.AddEventHandler(cache.Handler[PT]{
		OnAdd:    check,
		OnUpdate: func(_, o PT) { check(o) },
		OnDelete: func(o PT) {
			meta := o.GetObjectMeta()
			gc.ownerDeleted(meta.UID)
			// An owner deleted in the foreground may now have none left.
			for _, ref := range meta.OwnerReferences {
				if owner, ok := api.LookupResource(ref.Kind); ok {
					gc.queue.Add(ownerKey(owner, meta.Namespace, ref.Name))
				}
			}
		},
	})
}

// foregroundDeleting says an object is being deleted in the foreground:
// it waits for the collector to delete its dependents.
func foregroundDeleting(meta *api.ObjectMeta) bool {
	return meta.DeletionTimestamp != nil && slices.Contains(meta.Finalizers, api.FinalizerForeground)
}

// ownerKeyPrefix marks the queue's keys of owners whose foreground
// finalizer is to be removed once they own nothing.
const ownerKeyPrefix = "owner:"

func ownerKey(res api.Resource, ns, name string) string {
	if !res.Namespaced || ns == "" {
		return ownerKeyPrefix + res.Name + "/" + name
	}
	return ownerKeyPrefix + res.Name + "/" + ns + "/" + name
}

// itemKey names an object across kinds: "pods/namespace/name".
func itemKey(res api.Resource, o api.Object) string {
	return res.Name + "/" + cache.Key(o)
}

func (gc *Controller) ownerDeleted(uid string) {
	for _, k := range gc.kinds {
		for _, d := range k.byOwner(uid) {
			gc.queue.Add(itemKey(k.resource(), d))
		}
	}
}

// Run collects garbage until ctx ends.
func (gc *Controller) Run(ctx context.Context, workers int) {
	go wait.Every(ctx, sweepPeriod, gc.sweep)
	workqueue.Run(ctx, gc.queue, workers, Name, gc.sync)
}

// sweep checks every owned object, for owners whose deletion was missed
// (the collector was down, say).
func (gc *Controller) sweep() {
	for _, k := range gc.kinds {
		for _, o := range k.owned() {
			gc.queue.Add(itemKey(k.resource(), o))
		}
	}
}

func (gc *Controller) sync(ctx context.Context, key string) error {
	if owner, ok := strings.CutPrefix(key, ownerKeyPrefix); ok {
		return gc.finishForeground(ctx, owner)
	}
	resName, rest, _ := strings.Cut(key, "/")
	k, ok := gc.kinds[resName]
	if !ok {
		return nil
	}
	ns, name := cache.SplitKey(rest)
	obj, ok := k.get(ns, name)
	if !ok {
		return nil
	}
	meta := obj.GetObjectMeta()
	if meta.DeletionTimestamp != nil || len(meta.OwnerReferences) == 0 {
		return nil
	}
	// Deleted when no owner is left but owners being deleted in the
	// foreground, which wait for it: then it goes in the foreground too.
	foreground := false
	for _, ref := range meta.OwnerReferences {
		state, err := gc.ownerState(ctx, ns, ref)
		if err != nil {
			return err
		}
		switch state {
		case ownerAlive:
			return nil
		case ownerForeground:
			foreground = true
		}
	}
	res := k.resource()
	log.WithFields(log.Fields{"kind": res.Kind, "object": cache.Key(obj), "owner": meta.OwnerReferences[0].Kind + "/" + meta.OwnerReferences[0].Name,
		"foreground": foreground}).Info("deleting object whose owners are gone")
	body := map[string]any{"preconditions": map[string]string{"uid": meta.UID}}
	if foreground {
		body["propagationPolicy"] = "Foreground"
	}
	err := gc.c.Do(ctx, http.MethodDelete, res.Path(ns, name), body, nil)
	if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
		return fmt.Errorf("deleting %s %s: %w", res.Kind, cache.Key(obj), err)
	}
	return nil
}

// ownerStates: an owner is alive, gone, or being deleted in the
// foreground (waiting for its dependents).
type ownerStates int

const (
	ownerAlive ownerStates = iota
	ownerGone
	ownerForeground
)

// ownerState says what became of the object ref names (by uid). The cache
// is asked first; since it may lag (an owner just created by another
// process), absence is confirmed with the apiserver.
func (gc *Controller) ownerState(ctx context.Context, ns string, ref api.OwnerReference) (ownerStates, error) {
	res, ok := api.LookupResource(ref.Kind)
	if !ok {
		return ownerAlive, nil // a kind minik8s does not serve: keep what it owns
	}
	if !res.Namespaced {
		ns = ""
	}
	state := func(o api.Object) ownerStates {
		switch meta := o.GetObjectMeta(); {
		case meta.UID != ref.UID:
			return ownerGone
		case foregroundDeleting(meta):
			return ownerForeground
		}
		return ownerAlive
	}
	if k, ok := gc.kinds[res.Name]; ok {
		if o, ok := k.get(ns, ref.Name); ok && o.GetObjectMeta().UID == ref.UID {
			return state(o), nil
		}
	}
	owner := res.New()
	err := gc.c.Do(ctx, http.MethodGet, res.Path(ns, ref.Name), nil, owner)
	switch {
	case errdefs.IsNotFound(err):
		return ownerGone, nil
	case err != nil:
		return ownerAlive, fmt.Errorf("looking up owner %s %s: %w", ref.Kind, ref.Name, err)
	}
	return state(owner), nil
}

// finishForeground removes the foreground finalizer of an owner ("pods/
// ns/name") whose dependents are all gone, which deletes it.
func (gc *Controller) finishForeground(ctx context.Context, key string) error {
	resName, rest, _ := strings.Cut(key, "/")
	res, ok := api.LookupResource(resName)
	if !ok {
		return nil
	}
	ns, name := cache.SplitKey(rest)
	owner := res.New()
	err := gc.c.Do(ctx, http.MethodGet, res.Path(ns, name), nil, owner)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", res.Kind, rest, err)
	}
	meta := owner.GetObjectMeta()
	if !foregroundDeleting(meta) {
		return nil
	}
	for _, k := range gc.kinds {
		if len(k.byOwner(meta.UID)) > 0 {
			return nil // the deletion of the last one brings it back here
		}
	}
	meta.Finalizers = slices.DeleteFunc(meta.Finalizers, func(f string) bool { return f == api.FinalizerForeground })
	err = gc.c.Do(ctx, http.MethodPut, res.Path(ns, name), owner, nil)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing the foreground finalizer of %s %s: %w", res.Kind, rest, err)
	}
	log.WithFields(log.Fields{"kind": res.Kind, "object": rest}).Info("dependents gone: deleting owner")
	return nil
}
