package apiserver

import (
	"context"
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
// them, without the reference to the owner. Foreground, which needs the
// owner kept until its dependents are gone (a finalizer), is refused.
func checkPropagation(policy string) error {
	switch policy {
	case "", propagationBackground, propagationOrphan:
		return nil
	case propagationForeground:
		return errdefs.Invalid("propagationPolicy", "Foreground is not supported: delete with Background (the default; the garbage collector removes the dependents) or Orphan")
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
			if !ownedBy(o, uid) {
				continue
			}
			_, err := dep.mutate(ctx, ns, o.GetObjectMeta().Name, func(cur api.Object) (api.Object, error) {
				meta := cur.GetObjectMeta()
				meta.OwnerReferences = slices.DeleteFunc(meta.OwnerReferences, func(r api.OwnerReference) bool { return r.UID == uid })
				return cur, nil
			})
			if err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("orphaning %s %s: %w", res.Kind, o.GetObjectMeta().Name, err)
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
