// Package authz holds the apiserver's authorizers, as Kubernetes'
// plugin/pkg/auth/authorizer does: RBAC over the Roles, ClusterRoles and
// bindings in the store, mirrored in memory (Authorizer, with the built-in
// policy written at start by EnsureBootstrapPolicy), and the node
// authorizer for what a kubelet reads of Secrets and ConfigMaps
// (NodeAuthorizer). They judge rbac.Attributes; reading a request into
// them and answering 403 is the HTTP front's (the parent package).
//
// It imports the registry (apiserver/registry) to read the store and
// libraries, nothing above.
package authz
