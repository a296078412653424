package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// RBAC is what the escalation check reads: the policy in force, the
// authorizer's judgement (allows) and the stored roles.
type RBAC struct {
	Policy func() *rbac.Static
	Allows func(rbac.Attributes) bool
	Roles  Objects
}

// NoEscalation keeps RBAC from being a way up, as in Kubernetes: a role
// may grant only what its writer u holds (or the writer has escalate on
// roles), and a binding may bind only a role that exists and whose grants
// its writer holds (or the writer has bind on that role). A binding to a
// role not there yet would grant whatever the role later says: Kubernetes
// answers it NotFound, the role's, and so does this. It runs on create,
// update and patch; a binding's roleRef cannot change (checkImmutable).
func (p RBAC) NoEscalation(ctx context.Context, u rbac.User, ns string, obj api.Object) error {
	if slices.Contains(u.Groups, rbac.Masters) {
		return nil
	}
	var granted []api.PolicyRule
	var ref *api.RoleRef
	res := ""
	switch o := obj.(type) {
	case *api.Role:
		granted, res = o.Rules, api.RolesResource.Name
	case *api.ClusterRole:
		granted, res, ns = o.Rules, api.ClusterRolesResource.Name, ""
	case *api.RoleBinding:
		ref, res = &o.RoleRef, api.RoleBindingsResource.Name
	case *api.ClusterRoleBinding:
		ref, res, ns = &o.RoleRef, api.ClusterRoleBindingsResource.Name, ""
	default:
		return nil
	}
	name := obj.GetObjectMeta().Name
	may := func(verb, resource, target string) bool {
		return p.Allows(rbac.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: api.RBACGroup,
			Resource: resource, Namespace: ns, Name: target})
	}
	if ref != nil {
		roleRes, err := roleResource(*ref, ns != "")
		if err != nil {
			return err
		}
		if may("bind", roleRes, ref.Name) {
			return nil
		}
		if granted, err = p.boundRules(ctx, ns, *ref); err != nil {
			return err
		}
	} else if may("escalate", res, name) {
		return nil
	}
	ok, missing := rbac.Covers(rbac.RulesFor(p.Policy(), u, ns), granted)
	if ok {
		return nil
	}
	var parts []string
	for _, m := range missing[:min(len(missing), 5)] {
		parts = append(parts, describeRule(m))
	}
	return fmt.Errorf("%s %q is forbidden: User %q may not grant what it does not hold (%s): %w",
		res, name, u.Name, strings.Join(parts, "; "), errdefs.ErrForbidden)
}

// roleResource is the resource a binding's roleRef names (a RoleBinding
// may name a Role or a ClusterRole, a ClusterRoleBinding a ClusterRole),
// 422 for any other, as validation says.
func roleResource(ref api.RoleRef, namespaced bool) (string, error) {
	switch {
	case ref.Kind == api.ClusterRoleKind:
		return api.ClusterRolesResource.Name, nil
	case ref.Kind == api.RoleKind && namespaced:
		return api.RolesResource.Name, nil
	case namespaced:
		return "", errdefs.Invalid("roleRef.kind", "%q is not supported: Role or ClusterRole", ref.Kind)
	}
	return "", errdefs.Invalid("roleRef.kind", "%q is not supported: ClusterRole", ref.Kind)
}

// boundRules are the rules of the role a binding in namespace ns refers
// to, read from the store (so that a role just made counts and one just
// deleted does not), or those of a built-in ClusterRole the store lacks,
// which the authorizer applies all the same. A role that is not there is
// Kubernetes' NotFound: clusterroles.rbac.authorization.k8s.io "x" not found.
func (p RBAC) boundRules(ctx context.Context, ns string, ref api.RoleRef) ([]api.PolicyRule, error) {
	if ref.Kind == api.RoleKind {
		obj, err := p.Roles.Get(ctx, api.RolesResource, ns, ref.Name)
		if errdefs.IsNotFound(err) {
			return nil, &RefNotFound{Resource: api.RolesResource.Name, Group: api.RBACGroup, Name: ref.Name}
		}
		if err != nil {
			return nil, err
		}
		return obj.(*api.Role).Rules, nil
	}
	obj, err := p.Roles.Get(ctx, api.ClusterRolesResource, "", ref.Name)
	if err == nil {
		return obj.(*api.ClusterRole).Rules, nil
	}
	if !errdefs.IsNotFound(err) {
		return nil, err
	}
	builtin, _ := rbac.BootstrapPolicy()
	for _, r := range builtin {
		if r.Name == ref.Name {
			return r.Rules, nil
		}
	}
	return nil, &RefNotFound{Resource: api.ClusterRolesResource.Name, Group: api.RBACGroup, Name: ref.Name}
}

// RefNotFound is a NotFound about another object than the request's (the
// role a binding names): it keeps its own words and details, as
// Kubernetes answers them.
type RefNotFound struct{ Resource, Group, Name string }

func (e *RefNotFound) Error() string {
	return fmt.Sprintf("%s.%s %q not found", e.Resource, e.Group, e.Name)
}
func (e *RefNotFound) Unwrap() error { return errdefs.ErrNotFound }

func describeRule(r api.PolicyRule) string {
	if len(r.NonResourceURLs) > 0 {
		return strings.Join(r.Verbs, ",") + " " + strings.Join(r.NonResourceURLs, ",")
	}
	group := strings.Join(r.APIGroups, ",")
	if group == "" {
		group = `""`
	}
	return fmt.Sprintf("%s %s in API group %s", strings.Join(r.Verbs, ","), strings.Join(r.Resources, ","), group)
}
