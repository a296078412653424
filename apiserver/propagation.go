package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// The propagation policies of a delete, as Kubernetes names them.
const (
	propagationBackground = "Background"
	propagationOrphan     = "Orphan"
	propagationForeground = "Foreground"
)

// checkPropagation validates a delete's propagationPolicy. Background (the
// default) leaves the dependents to the garbage collector; Orphan keeps
// them, without the reference to the owner; Foreground keeps the owner
// (its foregroundDeletion finalizer) until the garbage collector has
// deleted them.
func checkPropagation(policy string) error {
	switch policy {
	case "", propagationBackground, propagationOrphan, propagationForeground:
		return nil
	}
	return errdefs.Invalid("propagationPolicy", "%q is not one of Background, Orphan, Foreground", policy)
}

// orphanDependents removes the references to the object at ns/name from
// the objects of its namespace that it owns, so that the garbage collector
// leaves them when it goes.
func (h *handlers) orphanDependents(ctx context.Context, reg *registry, ns, name string) error {
	owner, err := reg.get(ctx, ns, name)
	if err != nil {
		return err
	}
	uid := owner.GetObjectMeta().UID
	return h.eachDependent(ctx, reg, ns, uid, func(dep *registry, o api.Object) error {
		_, err := dep.mutate(ctx, ns, o.GetObjectMeta().Name, func(cur api.Object) (api.Object, error) {
			meta := cur.GetObjectMeta()
			meta.OwnerReferences = slices.DeleteFunc(meta.OwnerReferences, func(r api.OwnerReference) bool { return r.UID == uid })
			return cur, nil
		})
		if err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("orphaning %s %s: %w", dep.res.Kind, o.GetObjectMeta().Name, err)
		}
		return nil
	})
}

// foregroundPolicy is the policy a Foreground delete of ns/name comes to:
// Foreground when the object owns something the garbage collector is to
// delete first, Background (nothing to wait for) otherwise.
func (h *handlers) foregroundPolicy(ctx context.Context, reg *registry, ns, name string) (string, error) {
	owner, err := reg.get(ctx, ns, name)
	if err != nil {
		return "", err
	}
	errFound := errors.New("found")
	err = h.eachDependent(ctx, reg, ns, owner.GetObjectMeta().UID, func(*registry, api.Object) error { return errFound })
	switch {
	case errors.Is(err, errFound):
		return propagationForeground, nil
	case err != nil:
		return "", err
	}
	return propagationBackground, nil
}

// eachDependent calls fn for each object of namespace ns owned by uid (a
// cluster-scoped owner has none here), through the registries reg's dry
// run or not.
func (h *handlers) eachDependent(ctx context.Context, reg *registry, ns, uid string, fn func(dep *registry, o api.Object) error) error {
	dry := reg != h.reg
	for _, res := range api.Resources {
		if !res.Namespaced || ns == "" {
			continue
		}
		dep := h.srv.registries[res.Name]
		if dry {
			dep = dep.dryRun()
		}
		objs, _, err := dep.list(ctx, ns, filter{})
		if err != nil {
			return err
		}
		for _, o := range objs {
			if ownedBy(o, uid) {
				if err := fn(dep, o); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func ownedBy(o api.Object, uid string) bool {
	for _, r := range o.GetObjectMeta().OwnerReferences {
		if r.UID == uid {
			return true
		}
	}
	return false
}
