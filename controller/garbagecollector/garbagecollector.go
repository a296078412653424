// Package garbagecollector deletes objects whose owners are gone: an
// object with ownerReferences none of which names an existing object (by
// uid) is deleted. Deleting a ReplicaSet thus deletes its pods, deleting a
// Service its Endpoints, and deleting a function what was made for it.
package garbagecollector

import (
	"context"
	"fmt"
	"net/http"
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

// New returns the collector following pods, replicasets, services,
// endpoints, configmaps and funcs through the factory's informers.
func New(c *client.Client, f *cache.Factory) *Controller {
	gc := &Controller{c: c, kinds: map[string]kind{}, queue: workqueue.New()}
	follow(gc, api.PodsResource, f.Pods())
	follow(gc, api.ReplicaSetsResource, f.ReplicaSets())
	follow(gc, api.ServicesResource, f.Services())
	follow(gc, api.EndpointsResource, f.Endpoints())
	follow(gc, api.ConfigMapsResource, f.ConfigMaps())
	follow(gc, api.FuncsResource, f.Funcs())
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
		if len(o.GetObjectMeta().OwnerReferences) > 0 {
			gc.queue.Add(itemKey(res, o))
		}
	}
	inf.AddEventHandler(cache.Handler[PT]{
		OnAdd:    check,
		OnUpdate: func(_, o PT) { check(o) },
		OnDelete: func(o PT) { gc.ownerDeleted(o.GetObjectMeta().UID) },
	})
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
	for _, ref := range meta.OwnerReferences {
		alive, err := gc.ownerExists(ctx, ns, ref)
		if err != nil {
			return err
		}
		if alive {
			return nil
		}
	}
	res := k.resource()
	log.WithFields(log.Fields{"kind": res.Kind, "object": cache.Key(obj), "owner": meta.OwnerReferences[0].Kind + "/" + meta.OwnerReferences[0].Name}).
		Info("deleting object whose owners are gone")
	body := map[string]any{"preconditions": map[string]string{"uid": meta.UID}}
	err := gc.c.Do(ctx, http.MethodDelete, res.Path(ns, name), body, nil)
	if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
		return fmt.Errorf("deleting %s %s: %w", res.Kind, cache.Key(obj), err)
	}
	return nil
}

// ownerExists reports whether the object ref names exists with ref's uid.
// The cache is asked first; since it may lag (an owner just created by
// another process), absence is confirmed with the apiserver.
func (gc *Controller) ownerExists(ctx context.Context, ns string, ref api.OwnerReference) (bool, error) {
	res, ok := api.LookupResource(ref.Kind)
	if !ok {
		return true, nil // a kind minik8s does not serve: keep what it owns
	}
	if !res.Namespaced {
		ns = ""
	}
	if k, ok := gc.kinds[res.Name]; ok {
		if o, ok := k.get(ns, ref.Name); ok && o.GetObjectMeta().UID == ref.UID {
			return true, nil
		}
	}
	owner := res.New()
	err := gc.c.Do(ctx, http.MethodGet, res.Path(ns, ref.Name), nil, owner)
	switch {
	case errdefs.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("looking up owner %s %s: %w", ref.Kind, ref.Name, err)
	}
	return owner.GetObjectMeta().UID == ref.UID, nil
}
