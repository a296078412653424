package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// The propagation policies of a delete, as Kubernetes names them.
const (
	PropagationBackground = "Background"
	PropagationOrphan     = "Orphan"
	PropagationForeground = "Foreground"
)

// Finalizers, as Kubernetes has them: deleting an object that has some (or
// deleting it in the foreground, which adds the garbage collector's) only
// sets its deletionTimestamp; the update that removes the last one deletes
// it. Pods first go through their graceful deletion: the kubelet's final
// delete (grace 0) is the one that waits for their finalizers.

// errNoFinalizers: the object has none, and goes at once.
var errNoFinalizers = errors.New("no finalizers")

// markDeleting keeps an object that has finalizers, or is deleted in the
// foreground, setting its deletion timestamp; kept is false when it has
// none, and may be deleted now, at version seen (the one read).
func (r *Store) markDeleting(ctx context.Context, ns, name string, opts DeleteOptions, rv, uid string) (obj api.Object, kept bool, seen string, err error) {
	obj, err = r.Mutate(ctx, ns, name, func(cur api.Object) (api.Object, error) {
		meta := cur.GetObjectMeta()
		seen = meta.ResourceVersion
		if rv != "" && rv != meta.ResourceVersion {
			return nil, fmt.Errorf("%s %q: resourceVersion %s is stale: %w", r.Resource.Kind, name, rv, errdefs.ErrConflict)
		}
		if uid != "" && uid != meta.UID {
			return nil, fmt.Errorf("%s %q: uid precondition %s does not match %s: %w", r.Resource.Kind, name, uid, meta.UID, errdefs.ErrConflict)
		}
		if opts.PropagationPolicy == PropagationForeground && !slices.Contains(meta.Finalizers, api.FinalizerForeground) {
			meta.Finalizers = append(meta.Finalizers, api.FinalizerForeground)
		}
		if len(meta.Finalizers) == 0 {
			return nil, errNoFinalizers
		}
		if meta.DeletionTimestamp == nil {
			now := time.Now().UTC()
			meta.DeletionTimestamp = &now
		}
		if g := opts.GracePeriodSeconds; meta.DeletionGracePeriodSeconds == nil || (g != nil && *g == 0) {
			zero := int64(0)
			meta.DeletionGracePeriodSeconds = &zero
		}
		return cur, nil
	})
	if errors.Is(err, errNoFinalizers) {
		return nil, false, seen, nil
	}
	return obj, err == nil, "", err
}

// finalized deletes obj, just written, when it is being deleted and has
// no finalizer left (nor a graceful deletion under way); otherwise, or
// when another write came first (which decides then), it returns obj.
func (r *Store) finalized(ctx context.Context, ns, name string, obj api.Object) (api.Object, error) {
	meta := obj.GetObjectMeta()
	if r.Resource.Kind == api.NamespacesResource.Kind || meta.DeletionTimestamp == nil || len(meta.Finalizers) > 0 ||
		(meta.DeletionGracePeriodSeconds != nil && *meta.DeletionGracePeriodSeconds > 0) {
		return obj, nil
	}
	out, err := r.remove(ctx, ns, name, meta.ResourceVersion)
	if errdefs.IsConflict(err) || errdefs.IsNotFound(err) {
		return obj, nil
	}
	return out, err
}

// checkNewFinalizers refuses finalizers added to an object being deleted,
// as Kubernetes does: they could keep it forever.
func checkNewFinalizers(cur, next *api.ObjectMeta) error {
	if cur.DeletionTimestamp == nil {
		return nil
	}
	for _, f := range next.Finalizers {
		if !slices.Contains(cur.Finalizers, f) {
			return errdefs.Invalid("metadata.finalizers", "%q cannot be added: the object is being deleted", f)
		}
	}
	return nil
}
