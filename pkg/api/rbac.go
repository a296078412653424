package api

import rbacv1 "k8s.io/api/rbac/v1"

// RBAC kinds as rbac.authorization.k8s.io/v1 has them, and the access
// reviews of authorization.k8s.io/v1. The evaluation lives in pkg/rbac.

const (
	// RBACGroup is the API group of Roles, ClusterRoles and their bindings.
	RBACGroup = "rbac.authorization.k8s.io"
	// AuthorizationGroup is the API group of the access reviews.
	AuthorizationGroup = "authorization.k8s.io"
)

// Wildcards a PolicyRule may use.
const (
	VerbAll        = "*"
	APIGroupAll    = "*"
	ResourceAll    = "*"
	NonResourceAll = "*"
)

// Subject kinds.
const (
	UserKind           = "User"
	GroupKind          = "Group"
	ServiceAccountKind = "ServiceAccount"
)

// Kinds a RoleRef names.
const (
	RoleKind        = "Role"
	ClusterRoleKind = "ClusterRole"
)

// PolicyRule grants Verbs on Resources of APIGroups (optionally only the
// objects named in ResourceNames), or Verbs on NonResourceURLs.
type PolicyRule struct {
	Verbs           []string `json:"verbs"`
	APIGroups       []string `json:"apiGroups,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	ResourceNames   []string `json:"resourceNames,omitempty"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// Subject is who a binding grants to: a User, a Group or a ServiceAccount.
type Subject struct {
	Kind string `json:"kind"`
	// APIGroup is "rbac.authorization.k8s.io" for User and Group, "" for
	// ServiceAccount.
	APIGroup string `json:"apiGroup,omitempty"`
	Name     string `json:"name"`
	// Namespace of a ServiceAccount; in a RoleBinding it defaults to the
	// binding's namespace.
	Namespace string `json:"namespace,omitempty"`
}

// RoleRef names the Role or ClusterRole a binding grants.
type RoleRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// Role is a namespaced set of rules.
type Role struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Rules      []PolicyRule `json:"rules"`
}

type RoleList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Role `json:"items"`
}

// ClusterRole is a cluster-wide set of rules, granted cluster-wide by a
// ClusterRoleBinding or in one namespace by a RoleBinding.
type ClusterRole struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Rules      []PolicyRule `json:"rules"`
	// AggregationRule is refused: no controller gathers other roles'
	// rules into this one.
	AggregationRule *rbacv1.AggregationRule `json:"aggregationRule,omitempty"`
}

type ClusterRoleList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []ClusterRole `json:"items"`
}

// RoleBinding grants a Role of its namespace, or a ClusterRole, to its
// subjects within its namespace.
type RoleBinding struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Subjects   []Subject `json:"subjects,omitempty"`
	RoleRef    RoleRef   `json:"roleRef"`
}

type RoleBindingList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []RoleBinding `json:"items"`
}

// ClusterRoleBinding grants a ClusterRole to its subjects cluster-wide.
type ClusterRoleBinding struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Subjects   []Subject `json:"subjects,omitempty"`
	RoleRef    RoleRef   `json:"roleRef"`
}

type ClusterRoleBindingList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []ClusterRoleBinding `json:"items"`
}

// ResourceAttributes describe a resource request in an access review.
type ResourceAttributes struct {
	Namespace   string `json:"namespace,omitempty"`
	Verb        string `json:"verb,omitempty"`
	Group       string `json:"group,omitempty"`
	Version     string `json:"version,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Name        string `json:"name,omitempty"`
}

// NonResourceAttributes describe a request for a path such as /healthz.
type NonResourceAttributes struct {
	Path string `json:"path,omitempty"`
	Verb string `json:"verb,omitempty"`
}

// SubjectAccessReview asks whether a given user may do something.
type SubjectAccessReview struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       SubjectAccessReviewSpec   `json:"spec"`
	Status     SubjectAccessReviewStatus `json:"status,omitempty"`
}

// SubjectAccessReviewSpec: exactly one of ResourceAttributes and
// NonResourceAttributes is set.
type SubjectAccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty"`
	NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty"`
	User                  string                 `json:"user,omitempty"`
	Groups                []string               `json:"groups,omitempty"`
	Extra                 map[string][]string    `json:"extra,omitempty"`
	UID                   string                 `json:"uid,omitempty"`
}

// SelfSubjectAccessReview asks whether the requester may do something.
type SelfSubjectAccessReview struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       SelfSubjectAccessReviewSpec `json:"spec"`
	Status     SubjectAccessReviewStatus   `json:"status,omitempty"`
}

// SelfSubjectAccessReviewSpec: exactly one of ResourceAttributes and
// NonResourceAttributes is set.
type SelfSubjectAccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty"`
	NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty"`
}

// SubjectAccessReviewStatus is the answer to an access review.
type SubjectAccessReviewStatus struct {
	Allowed         bool   `json:"allowed"`
	Denied          bool   `json:"denied,omitempty"`
	Reason          string `json:"reason,omitempty"`
	EvaluationError string `json:"evaluationError,omitempty"`
}
