package authz

import (
	"context"
	"fmt"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	log "github.com/sirupsen/logrus"
)

// Authorizer judges requests by the RBAC objects in the store, mirrored in
// memory. The built-in policy (rbac.BootstrapPolicy) is written to the
// store at start; a built-in object missing from the store still applies,
// so that deleting it cannot lock the cluster's own components out.
// system:masters may do anything, as in Kubernetes.
type Authorizer struct {
	mirrors []*registry.Mirror
	policy  atomic.Pointer[rbac.Static]
	// rebuilding serializes rebuilds: the mirrors call rebuild from their
	// own goroutines, and two at once could store the older policy last
	// (a binding made, or revoked, would then not count until the next
	// change of any RBAC object).
	rebuilding sync.Mutex
}

// RBACResources are the kinds an Authorizer follows.
var RBACResources = []api.Resource{api.RolesResource, api.ClusterRolesResource, api.RoleBindingsResource, api.ClusterRoleBindingsResource}

// NewAuthorizer is the authorizer over the registries of RBACResources,
// by resource name.
func NewAuthorizer(registries map[string]*registry.Store) *Authorizer {
	a := &Authorizer{}
	for _, res := range RBACResources {
		a.mirrors = append(a.mirrors, registry.NewMirror(registries[res.Name], a.rebuild))
	}
	a.rebuild()
	return a
}

// rebuild makes the policy from the mirrors and the built-in objects.
func (a *Authorizer) rebuild() {
	a.rebuilding.Lock()
	defer a.rebuilding.Unlock()
	have := map[string]bool{}
	var objs []api.Object
	for _, m := range a.mirrors {
		for _, o := range m.Objects() {
			have[o.GetTypeMeta().Kind+"/"+o.GetObjectMeta().Name] = true
			objs = append(objs, o)
		}
	}
	for _, o := range BootstrapObjects() {
		if o.GetObjectMeta().Namespace == "" && !have[o.GetTypeMeta().Kind+"/"+o.GetObjectMeta().Name] {
			objs = append(objs, o)
		}
	}
	p, err := rbac.NewStatic(objs...)
	if err != nil {
		log.WithError(err).Error("rbac policy")
		return
	}
	a.policy.Store(p)
}

// BootstrapObjects are the built-in policy's roles and bindings.
func BootstrapObjects() []api.Object {
	roles, bindings := rbac.BootstrapPolicy()
	var out []api.Object
	for _, r := range roles {
		out = append(out, r)
	}
	for _, b := range bindings {
		out = append(out, b)
	}
	return out
}

// Run follows the RBAC objects until ctx ends.
func (a *Authorizer) Run(ctx context.Context) {
	for _, m := range a.mirrors {
		go m.Run(ctx)
	}
	<-ctx.Done()
}

// Allows tells whether the policy lets attrs.User make request attrs.
func (a *Authorizer) Allows(attrs rbac.Attributes) bool {
	if slices.Contains(attrs.User.Groups, rbac.Masters) {
		return true
	}
	ok, _ := rbac.Authorize(a.policy.Load(), attrs)
	return ok
}

// Policy is the policy the Authorizer judges by now.
func (a *Authorizer) Policy() *rbac.Static { return a.policy.Load() }

// EnsureBootstrapPolicy writes the built-in ClusterRoles and
// ClusterRoleBindings: created when missing, brought back to their
// built-in content when they carry the autoupdate annotation "true" (an
// administrator who set it to "false" keeps their changes).
// registries holds those of ClusterRoles and ClusterRoleBindings, by
// resource name.
func EnsureBootstrapPolicy(ctx context.Context, registries map[string]*registry.Store) error {
	for _, o := range BootstrapObjects() {
		reg := registries[api.ClusterRolesResource.Name]
		if _, ok := o.(*api.ClusterRoleBinding); ok {
			reg = registries[api.ClusterRoleBindingsResource.Name]
		}
		name := o.GetObjectMeta().Name
		cur, err := reg.Get(ctx, "", name)
		switch {
		case errdefs.IsNotFound(err):
			if _, err := reg.Create(ctx, "", o); err != nil && !errdefs.IsAlreadyExists(err) {
				return fmt.Errorf("creating %s %s: %w", reg.Resource.Kind, name, err)
			}
		case err != nil:
			return err
		case cur.GetObjectMeta().Annotations[rbac.AutoUpdateAnnotation] == "true" && !sameRoleRef(cur, o):
			// A binding's role cannot change: it is made again, as
			// Kubernetes' reconciliation does.
			if _, err := reg.Delete(ctx, "", name, registry.DeleteOptions{}); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("deleting %s %s: %w", reg.Resource.Kind, name, err)
			}
			if _, err := reg.Create(ctx, "", o); err != nil && !errdefs.IsAlreadyExists(err) {
				return fmt.Errorf("creating %s %s: %w", reg.Resource.Kind, name, err)
			}
		case cur.GetObjectMeta().Annotations[rbac.AutoUpdateAnnotation] == "true" && !samePolicy(cur, o):
			o.GetObjectMeta().ResourceVersion = cur.GetObjectMeta().ResourceVersion
			o.GetObjectMeta().UID = cur.GetObjectMeta().UID
			o.GetObjectMeta().CreationTimestamp = cur.GetObjectMeta().CreationTimestamp
			if _, err := reg.Update(ctx, "", name, o); err != nil && !errdefs.IsConflict(err) {
				return fmt.Errorf("updating %s %s: %w", reg.Resource.Kind, name, err)
			}
		}
	}
	return nil
}

// sameRoleRef is false for two ClusterRoleBindings naming different roles.
func sameRoleRef(a, b api.Object) bool {
	x, ok1 := a.(*api.ClusterRoleBinding)
	y, ok2 := b.(*api.ClusterRoleBinding)
	return !ok1 || !ok2 || x.RoleRef == y.RoleRef
}

// samePolicy tells whether two built-in objects grant the same.
func samePolicy(a, b api.Object) bool {
	switch a := a.(type) {
	case *api.ClusterRole:
		b, ok := b.(*api.ClusterRole)
		return ok && reflect.DeepEqual(a.Rules, b.Rules)
	case *api.ClusterRoleBinding:
		b, ok := b.(*api.ClusterRoleBinding)
		return ok && reflect.DeepEqual(a.Subjects, b.Subjects) && a.RoleRef == b.RoleRef
	}
	return false
}

// Fixed is an authorizer whose policy is the built-in one and objs, and
// follows no store: for checks of the policy alone.
func Fixed(objs ...api.Object) (*Authorizer, error) {
	p, err := rbac.NewStatic(append(BootstrapObjects(), objs...)...)
	if err != nil {
		return nil, err
	}
	a := &Authorizer{}
	a.policy.Store(p)
	return a, nil
}
