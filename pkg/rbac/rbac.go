// Package rbac evaluates Kubernetes RBAC: whether the Roles, ClusterRoles
// and bindings a Source holds let a user make a request. It knows nothing of
// HTTP or storage; the apiserver fills Attributes from a request and
// supplies a Source (informer-backed listers, or Static).
package rbac

import (
	"fmt"
	"slices"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Well-known users and groups, as Kubernetes names them.
const (
	// AllAuthenticated is the group of every authenticated user; the
	// authenticator adds it.
	AllAuthenticated = "system:authenticated"
	// AllUnauthenticated is the group of anonymous requests.
	AllUnauthenticated = "system:unauthenticated"
	// Anonymous is the user name of anonymous requests.
	Anonymous = "system:anonymous"
	// Masters is the group bound to cluster-admin.
	Masters = "system:masters"
	// NodesGroup is the group of kubelets (users "system:node:NAME").
	NodesGroup = "system:nodes"
	// NodeUserPrefix starts the user name of a kubelet.
	NodeUserPrefix = "system:node:"
	// BootstrappersGroup holds the user of the node join token, which may
	// only fetch a node's credentials.
	BootstrappersGroup = "system:bootstrappers"
	// FuncRunnersGroup is the group of function runners.
	FuncRunnersGroup = "system:funcrunners"
	// APIServerKubeletClient is the apiserver's user towards kubelets.
	APIServerKubeletClient = "minik8s-apiserver-kubelet-client"
	// SchedulerUser and ControllerManagerUser are the control plane's users.
	SchedulerUser         = "system:kube-scheduler"
	ControllerManagerUser = "system:kube-controller-manager"
	// ServiceAccountUserPrefix starts "system:serviceaccount:NS:NAME".
	ServiceAccountUserPrefix = "system:serviceaccount:"
	// ServiceAccountsGroup holds every ServiceAccount; ServiceAccountsGroup
	// + ":" + NS those of one namespace.
	ServiceAccountsGroup = "system:serviceaccounts"
)

// IsAPIServer tells whether a client certificate's subject (CommonName
// name, Organization groups) is the apiserver's towards kubelets and
// runners, or an admin's.
func IsAPIServer(name string, groups []string) bool {
	return name == APIServerKubeletClient || slices.Contains(groups, Masters)
}

// ServiceAccountUsername is the user name of ServiceAccount ns/name.
func ServiceAccountUsername(ns, name string) string {
	return ServiceAccountUserPrefix + ns + ":" + name
}

// ServiceAccountGroups are the groups Kubernetes gives ServiceAccount users
// of namespace ns (besides AllAuthenticated).
func ServiceAccountGroups(ns string) []string {
	return []string{ServiceAccountsGroup, ServiceAccountsGroup + ":" + ns}
}

// User is who makes a request. Groups holds every group, including
// AllAuthenticated or AllUnauthenticated, which the caller adds.
type User struct {
	Name   string
	Groups []string
}

// Attributes describe a request. For a resource request (ResourceRequest
// true) Verb is get, list, watch, create, update, patch, delete or
// deletecollection, APIGroup is "" for the core group, Namespace is "" for
// cluster-scoped resources and for requests across all namespaces, and Name
// is "" for list, watch, create and deletecollection (unless a list is
// narrowed to one name). For a non-resource request Path is the URL path and
// Verb the lower-case HTTP method (get, post, put, delete, ...).
type Attributes struct {
	User            User
	Verb            string
	APIGroup        string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	ResourceRequest bool
	Path            string
}

// Source is where Authorize reads the policy. An informer-backed lister
// implements it directly; what it returns is only read, never modified, so
// it may hand out its cached objects. A name lookup returns nil when there
// is no such object.
type Source interface {
	Roles(namespace string) []*api.Role
	ClusterRoles() []*api.ClusterRole
	RoleBindings(namespace string) []*api.RoleBinding
	ClusterRoleBindings() []*api.ClusterRoleBinding
	Role(namespace, name string) *api.Role
	ClusterRole(name string) *api.ClusterRole
}

// Authorize tells whether src lets a.User make the request a, as
// Kubernetes' RBAC authorizer does: ClusterRoleBindings grant cluster-wide;
// RoleBindings of a.Namespace grant within it, through a Role of that
// namespace or a ClusterRole. When allowed, reason names the binding, the
// role and the subject that allowed it; when denied, reason is "".
func Authorize(src Source, a Attributes) (allowed bool, reason string) {
	for _, b := range src.ClusterRoleBindings() {
		s := appliesTo(a.User, b.Subjects, "")
		if s == nil || b.RoleRef.Kind != api.ClusterRoleKind {
			continue
		}
		r := src.ClusterRole(b.RoleRef.Name)
		if r == nil || !RulesAllow(a, r.Rules) {
			continue
		}
		return true, fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to %s",
			b.Name, r.Name, describeSubject(s, ""))
	}
	if !a.ResourceRequest || a.Namespace == "" {
		return false, ""
	}
	for _, b := range src.RoleBindings(a.Namespace) {
		if b.Namespace != a.Namespace {
			continue
		}
		s := appliesTo(a.User, b.Subjects, b.Namespace)
		if s == nil {
			continue
		}
		var rules []api.PolicyRule
		switch b.RoleRef.Kind {
		case api.RoleKind:
			r := src.Role(b.Namespace, b.RoleRef.Name)
			if r == nil {
				continue
			}
			rules = r.Rules
		case api.ClusterRoleKind:
			r := src.ClusterRole(b.RoleRef.Name)
			if r == nil {
				continue
			}
			rules = r.Rules
		default:
			continue
		}
		if !RulesAllow(a, rules) {
			continue
		}
		return true, fmt.Sprintf("RBAC: allowed by RoleBinding %q of %s %q to %s",
			b.Name+"/"+b.Namespace, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(s, b.Namespace))
	}
	return false, ""
}

// RulesFor lists the rules granted to u in namespace (cluster-wide ones only
// when namespace is ""), for escalation checks and rules reviews.
func RulesFor(src Source, u User, namespace string) []api.PolicyRule {
	var out []api.PolicyRule
	for _, b := range src.ClusterRoleBindings() {
		if b.RoleRef.Kind != api.ClusterRoleKind || appliesTo(u, b.Subjects, "") == nil {
			continue
		}
		if r := src.ClusterRole(b.RoleRef.Name); r != nil {
			out = append(out, r.Rules...)
		}
	}
	if namespace == "" {
		return out
	}
	for _, b := range src.RoleBindings(namespace) {
		if b.Namespace != namespace || appliesTo(u, b.Subjects, b.Namespace) == nil {
			continue
		}
		switch b.RoleRef.Kind {
		case api.RoleKind:
			if r := src.Role(b.Namespace, b.RoleRef.Name); r != nil {
				out = append(out, r.Rules...)
			}
		case api.ClusterRoleKind:
			if r := src.ClusterRole(b.RoleRef.Name); r != nil {
				out = append(out, r.Rules...)
			}
		}
	}
	return out
}

// appliesTo returns the first subject that u is, or nil. bindingNamespace is
// the namespace of a RoleBinding ("" for a ClusterRoleBinding): a
// ServiceAccount subject without a namespace means one of it.
func appliesTo(u User, subjects []api.Subject, bindingNamespace string) *api.Subject {
	for i := range subjects {
		s := &subjects[i]
		switch s.Kind {
		case api.UserKind:
			if u.Name == s.Name {
				return s
			}
		case api.GroupKind:
			if slices.Contains(u.Groups, s.Name) {
				return s
			}
		case api.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && u.Name == ServiceAccountUsername(ns, s.Name) {
				return s
			}
		}
	}
	return nil
}

func describeSubject(s *api.Subject, bindingNamespace string) string {
	if s.Kind == api.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// RulesAllow tells whether one of rules allows a.
func RulesAllow(a Attributes, rules []api.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(a, &rules[i]) {
			return true
		}
	}
	return false
}

// RuleAllows tells whether rule allows a, as Kubernetes matches rules:
//   - "*" in verbs, apiGroups or resources matches anything;
//   - a request for a subresource matches only "resource/subresource" or
//     "*/subresource": "pods" does not cover "pods/log", and, as in
//     Kubernetes, "pods/*" is no wildcard (it names a subresource "*");
//   - a rule with resourceNames matches only requests naming one of them,
//     never a list, watch, create or deletecollection without a name;
//   - a nonResourceURL ending in "*" matches the paths it prefixes.
func RuleAllows(a Attributes, rule *api.PolicyRule) bool {
	if !verbMatches(rule, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule, a.Path)
	}
	return apiGroupMatches(rule, a.APIGroup) &&
		resourceMatches(rule, a.Resource, a.Subresource) &&
		resourceNameMatches(rule, a.Name)
}

func verbMatches(rule *api.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == api.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *api.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == api.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

func resourceMatches(rule *api.PolicyRule, resource, subresource string) bool {
	combined := resource
	if subresource != "" {
		combined += "/" + subresource
	}
	for _, r := range rule.Resources {
		if r == api.ResourceAll || r == combined {
			return true
		}
		if subresource != "" && r == "*/"+subresource {
			return true
		}
	}
	return false
}

func resourceNameMatches(rule *api.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	return name != "" && slices.Contains(rule.ResourceNames, name)
}

func nonResourceURLMatches(rule *api.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == api.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}

// Forbidden is the message Kubernetes gives when a is denied, e.g.
//
//	User "alice" cannot create resource "pods" in API group "" in the namespace "default"
//	User "alice" cannot list resource "nodes" in API group "" at the cluster scope
//	User "alice" cannot get path "/metrics"
//
// The apiserver's 403 prefixes it with what was refused, as Kubernetes does:
// `pods "web" is forbidden: ` or `pods is forbidden: `.
func Forbidden(a Attributes) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q",
			a.User.Name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope",
		a.User.Name, a.Verb, resource, a.APIGroup)
}

// ReviewAttributes turns the attributes of an access review into the
// request Authorize judges. Exactly one of res and nonRes must be set.
func ReviewAttributes(u User, res *api.ResourceAttributes, nonRes *api.NonResourceAttributes) (Attributes, error) {
	switch {
	case res != nil && nonRes != nil:
		return Attributes{}, errdefs.Invalid("spec.nonResourceAttributes",
			"cannot be specified in combination with resourceAttributes")
	case res != nil:
		return Attributes{User: u, ResourceRequest: true, Verb: res.Verb, APIGroup: res.Group,
			Resource: res.Resource, Subresource: res.Subresource, Namespace: res.Namespace, Name: res.Name}, nil
	case nonRes != nil:
		return Attributes{User: u, Verb: nonRes.Verb, Path: nonRes.Path}, nil
	}
	return Attributes{}, errdefs.Invalid("spec.resourceAttributes",
		"exactly one of nonResourceAttributes or resourceAttributes must be specified")
}
