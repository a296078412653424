package registry

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// Namespaces, as Kubernetes' namespace lifecycle has them: an object is
// created only in a namespace that exists and is not being deleted;
// deleting a namespace marks it Terminating, the namespace controller
// deletes what is in it and then finalizes it, and only then is it gone.

// builtinNamespaces always exist; the first three may not be deleted.
var builtinNamespaces = []string{api.DefaultNamespace, api.NamespaceSystem, api.NamespacePublic, function.RunnerNamespace}

func undeletable(name string) bool {
	return name == api.DefaultNamespace || name == api.NamespaceSystem || name == api.NamespacePublic
}

// NamespaceIndex follows the namespaces (a mirror), so that a create needs
// no store read to know its namespace is there. A namespace this server
// just marked Terminating counts as such until the mirror catches up.
type NamespaceIndex struct {
	reg    *Store
	mirror *Mirror

	mu      sync.Mutex
	written map[string]*api.Namespace // by name, until the mirror has its version
}

func NewNamespaceIndex(reg *Store) *NamespaceIndex {
	return &NamespaceIndex{reg: reg, mirror: NewMirror(reg, func() {}), written: map[string]*api.Namespace{}}
}

// Run follows the namespaces until ctx ends.
func (n *NamespaceIndex) Run(ctx context.Context) { n.mirror.Run(ctx) }

// Names are the namespaces as this server's mirror holds them: a read of
// memory, not of the store.
func (n *NamespaceIndex) Names() []string {
	objs := n.mirror.Objects()
	names := make([]string, 0, len(objs))
	for _, o := range objs {
		names = append(names, o.GetObjectMeta().Name)
	}
	slices.Sort(names)
	return names
}

// phase is a namespace's phase as this server knows it.
func (n *NamespaceIndex) phase(name string) (string, bool) {
	cur, ok := n.mirror.get("/" + name)
	n.mu.Lock()
	defer n.mu.Unlock()
	if w := n.written[name]; w != nil {
		if !ok || resourceVersion(cur) < resourceVersion(w) {
			return w.Status.Phase, true
		}
		delete(n.written, name)
	}
	if !ok {
		return "", false
	}
	return cur.(*api.Namespace).Status.Phase, true
}

func resourceVersion(o api.Object) int64 {
	v, _ := strconv.ParseInt(o.GetObjectMeta().ResourceVersion, 10, 64)
	return v
}

func (n *NamespaceIndex) Bootstrap(ctx context.Context) error {
	for _, name := range builtinNamespaces {
		_, err := n.reg.Create(ctx, "", &api.Namespace{ObjectMeta: api.ObjectMeta{Name: name}})
		if err != nil && !errdefs.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// admit says whether objects may be created in namespace ns.
// Observe records a namespace this server just wrote.
func (n *NamespaceIndex) Observe(ns *api.Namespace) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.written[ns.Name] = ns
}

func (n *NamespaceIndex) Admit(ctx context.Context, ns string) error {
	phase, ok := n.phase(ns)
	if !ok {
		// The index may lag a namespace created a moment ago.
		obj, err := n.reg.Get(ctx, "", ns)
		if errdefs.IsNotFound(err) {
			return fmt.Errorf("namespace %q not found: %w", ns, errdefs.ErrNotFound)
		}
		if err != nil {
			return err
		}
		phase = obj.(*api.Namespace).Status.Phase
	}
	if phase == api.NamespaceTerminating {
		return fmt.Errorf("namespace %q is being terminated: nothing new can be created in it: %w", ns, errdefs.ErrForbidden)
	}
	return nil
}

// deleteNamespace marks a namespace Terminating; the namespace controller
// empties it and finalizes it. One that is terminating with no finalizer
// left is removed.
func (r *Store) deleteNamespace(ctx context.Context, name string, rv string) (api.Object, error) {
	if undeletable(name) {
		return nil, fmt.Errorf("namespace %q may not be deleted: %w", name, errdefs.ErrForbidden)
	}
	var gone bool
	out, err := r.Mutate(ctx, "", name, func(o api.Object) (api.Object, error) {
		ns := o.(*api.Namespace)
		if rv != "" && rv != ns.ResourceVersion {
			return nil, fmt.Errorf("namespace %q: resourceVersion %s is stale: %w", name, rv, errdefs.ErrConflict)
		}
		if ns.DeletionTimestamp != nil && len(ns.Spec.Finalizers) == 0 {
			gone = true
			return nil, errFinalized
		}
		if ns.DeletionTimestamp == nil {
			now := time.Now().UTC().Truncate(time.Second)
			ns.DeletionTimestamp = &now
		}
		ns.Status.Phase = api.NamespaceTerminating
		if !slices.Contains(ns.Spec.Finalizers, api.FinalizerKubernetes) {
			ns.Spec.Finalizers = append(ns.Spec.Finalizers, api.FinalizerKubernetes)
		}
		return ns, nil
	})
	if gone {
		return r.RemoveFinalized(ctx, name)
	}
	return out, err
}

var errFinalized = fmt.Errorf("finalized")

func (r *Store) RemoveFinalized(ctx context.Context, name string) (api.Object, error) {
	out := r.Resource.New()
	if err := r.Storage.Delete(ctx, r.Key("", name), out, ""); err != nil {
		return nil, r.notFound(err, "", name)
	}
	return out, nil
}
