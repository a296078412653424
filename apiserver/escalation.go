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
// roles), and a binding may bind only a role whose grants its writer holds
// (or the writer has bind on that role).
func (s *Server) noEscalation(ctx context.Context, ns string, obj api.Object) error {
	u := userOf(ctx)
	if slices.Contains(u.Groups, rbac.Masters) {
		return nil
	}
	policy := s.authz.policy.Load()
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
		roleRes := api.ClusterRolesResource.Name
		if ref.Kind == api.RoleKind {
			roleRes = api.RolesResource.Name
		}
		if may("bind", roleRes, ref.Name) {
			return nil
		}
		switch {
		case ref.Kind == api.RoleKind:
			if r := policy.Role(ns, ref.Name); r != nil {
				granted = r.Rules
			}
		default:
			if r := policy.ClusterRole(ref.Name); r != nil {
				granted = r.Rules
			}
		}
	} else if may("escalate", res, name) {
		return nil
	}
	ok, missing := rbac.Covers(rbac.RulesFor(policy, u, ns), granted)
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
