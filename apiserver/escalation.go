package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// noEscalation keeps RBAC from being a way up, as in Kubernetes: a role
// may grant only what its writer holds (or the writer has escalate on
// roles), and a binding may bind only a role that exists and whose grants
// its writer holds (or the writer has bind on that role). A binding to a
// role not there yet would grant whatever the role later says: Kubernetes
// answers it NotFound, the role's, and so does this. It runs on create,
// update and patch; a binding's roleRef cannot change (checkImmutable).
func (s *Server) noEscalation(ctx context.Context, ns string, obj api.Object) error {
	u := userOf(ctx)
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
		return s.authz.allows(rbac.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: api.RBACGroup,
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
		if granted, err = s.boundRules(ctx, ns, *ref); err != nil {
			return err
		}
	} else if may("escalate", res, name) {
		return nil
	}
	ok, missing := rbac.Covers(rbac.RulesFor(s.authz.policy.Load(), u, ns), granted)
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
func (s *Server) boundRules(ctx context.Context, ns string, ref api.RoleRef) ([]api.PolicyRule, error) {
	if ref.Kind == api.RoleKind {
		obj, err := s.registries[api.RolesResource.Name].get(ctx, ns, ref.Name)
		if errdefs.IsNotFound(err) {
			return nil, &refNotFound{api.RolesResource.Name, api.RBACGroup, ref.Name}
		}
		if err != nil {
			return nil, err
		}
		return obj.(*api.Role).Rules, nil
	}
	obj, err := s.registries[api.ClusterRolesResource.Name].get(ctx, "", ref.Name)
	if err == nil {
		return obj.(*api.ClusterRole).Rules, nil
	}
	if !errdefs.IsNotFound(err) {
		return nil, err
	}
	for _, o := range bootstrapObjects() {
		if r, ok := o.(*api.ClusterRole); ok && r.Name == ref.Name {
			return r.Rules, nil
		}
	}
	return nil, &refNotFound{api.ClusterRolesResource.Name, api.RBACGroup, ref.Name}
}

// refNotFound is a NotFound about another object than the request's (the
// role a binding names): it keeps its own words and details, as
// Kubernetes answers them.
type refNotFound struct{ resource, group, name string }

func (e *refNotFound) Error() string {
	return fmt.Sprintf("%s.%s %q not found", e.resource, e.group, e.name)
}
func (e *refNotFound) Unwrap() error { return errdefs.ErrNotFound }

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
