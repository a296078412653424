package validation

import (
	"fmt"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// RBAC objects are named as Kubernetes names them: any path segment
// ("system:node" is a ClusterRole).
func pathSegmentName(field, name string) error {
	switch {
	case name == "." || name == "..":
		return errdefs.Invalid(field, "%q may not be '.' or '..'", name)
	case strings.ContainsAny(name, "/%"):
		return errdefs.Invalid(field, "%q may not contain '/' or '%%'", name)
	case len(name) > 253:
		return errdefs.Invalid(field, "%q is longer than 253 characters", name)
	}
	return nil
}

// policyRules checks the rules of a Role (namespaced: no non-resource
// URLs) or ClusterRole.
func policyRules(field string, rules []api.PolicyRule, namespaced bool) error {
	for i, r := range rules {
		f := fmt.Sprintf("%s[%d]", field, i)
		if len(r.Verbs) == 0 {
			return errdefs.Invalid(f+".verbs", "at least one verb is required")
		}
		switch {
		case len(r.NonResourceURLs) > 0 && namespaced:
			return errdefs.Invalid(f+".nonResourceURLs", "namespaced rules cannot apply to non-resource URLs")
		case len(r.NonResourceURLs) > 0 && (len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0):
			return errdefs.Invalid(f+".nonResourceURLs", "rules cannot apply to both regular resources and non-resource URLs")
		case len(r.NonResourceURLs) == 0 && len(r.Resources) == 0:
			return errdefs.Invalid(f+".resources", "resource rules must supply at least one resource")
		case len(r.NonResourceURLs) == 0 && len(r.APIGroups) == 0:
			return errdefs.Invalid(f+".apiGroups", "resource rules must supply at least one api group (\"\" is the core group)")
		}
		for _, u := range r.NonResourceURLs {
			if !strings.HasPrefix(u, "/") && u != api.NonResourceAll {
				return errdefs.Invalid(f+".nonResourceURLs", "%q must begin with /", u)
			}
		}
	}
	return nil
}

// binding checks a RoleBinding's (namespaced) or ClusterRoleBinding's
// subjects and role reference.
func binding(subjects []api.Subject, ref api.RoleRef, namespaced bool) error {
	switch {
	case ref.APIGroup != api.RBACGroup:
		return errdefs.Invalid("roleRef.apiGroup", "%q is not supported: %s", ref.APIGroup, api.RBACGroup)
	case ref.Kind != api.ClusterRoleKind && (ref.Kind != api.RoleKind || !namespaced):
		if namespaced {
			return errdefs.Invalid("roleRef.kind", "%q is not supported: Role or ClusterRole", ref.Kind)
		}
		return errdefs.Invalid("roleRef.kind", "%q is not supported: ClusterRole", ref.Kind)
	case ref.Name == "":
		return errdefs.Invalid("roleRef.name", "name is required")
	}
	if err := pathSegmentName("roleRef.name", ref.Name); err != nil {
		return err
	}
	for i, sub := range subjects {
		f := fmt.Sprintf("subjects[%d]", i)
		if sub.Name == "" {
			return errdefs.Invalid(f+".name", "name is required")
		}
		switch sub.Kind {
		case api.UserKind, api.GroupKind:
			if sub.APIGroup != api.RBACGroup && sub.APIGroup != "" {
				return errdefs.Invalid(f+".apiGroup", "%q is not supported for a %s: %s", sub.APIGroup, sub.Kind, api.RBACGroup)
			}
		case api.ServiceAccountKind:
			if sub.APIGroup != "" {
				return errdefs.Invalid(f+".apiGroup", "%q is not supported for a ServiceAccount: \"\"", sub.APIGroup)
			}
			if sub.Namespace == "" && !namespaced {
				return errdefs.Invalid(f+".namespace", "a ServiceAccount subject needs its namespace")
			}
		default:
			return errdefs.Invalid(f+".kind", "%q is not supported: User, Group or ServiceAccount", sub.Kind)
		}
	}
	return nil
}
