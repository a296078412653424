package apiserver

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// verifyServiceAccountToken checks a service account's token as
// Kubernetes' JWT authenticator and validator do: its signature and
// issuer; an audience of the apiserver's own; its exp (required, "no exp,
// no entry"), nbf and iat within a minute's leeway; and that its service
// account, and the pod, secret or node it is bound to, exist with the
// UIDs it names and were not deleted more than the leeway ago.
func (s *Server) verifyServiceAccountToken(ctx context.Context, token string) (rbac.User, error) {
	var claims saClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		return &s.creds.saKey.PublicKey, nil
	}, jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}), jwt.WithIssuer(saIssuer),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(tokenLeeway))
	if err != nil {
		return rbac.User{}, fmt.Errorf("service account token: %v: %w", err, errdefs.ErrUnauthorized)
	}
	if !slices.ContainsFunc(claims.Audience, func(a string) bool { return slices.Contains(apiAudiences, a) }) {
		return rbac.User{}, fmt.Errorf("service account token: token audiences %q is invalid for the target audiences %q: %w",
			[]string(claims.Audience), apiAudiences, errdefs.ErrUnauthorized)
	}
	k := claims.Kubernetes
	deletedBefore := time.Now().Add(-tokenLeeway)
	// holds says whether the object the token names is still there as named.
	holds := func(res api.Resource, ns string, ref *objectRef) bool {
		obj, err := s.registries[res.Name].get(ctx, ns, ref.Name)
		if err != nil {
			return false
		}
		meta := obj.GetObjectMeta()
		return meta.UID == ref.UID && (meta.DeletionTimestamp == nil || !meta.DeletionTimestamp.Before(deletedBefore))
	}
	if !holds(api.ServiceAccountsResource, k.Namespace, &k.ServiceAccount) {
		return rbac.User{}, fmt.Errorf("service account %s/%s of the token no longer exists: %w", k.Namespace, k.ServiceAccount.Name, errdefs.ErrUnauthorized)
	}
	bound := []boundRef{{api.PodsResource, k.Namespace, k.Pod}, {api.SecretsResource, k.Namespace, k.Secret}}
	if k.Pod == nil {
		// A pod's token names its node for information; a node's token
		// lives with the node.
		bound = append(bound, boundRef{api.NodesResource, "", k.Node})
	}
	for _, b := range bound {
		if b.ref != nil && !holds(b.res, b.ns, b.ref) {
			return rbac.User{}, fmt.Errorf("service account token: the %s %q it was bound to no longer exists: %w",
				b.res.Kind, b.ref.Name, errdefs.ErrUnauthorized)
		}
	}
	groups := append(rbac.ServiceAccountGroups(k.Namespace), rbac.AllAuthenticated)
	return rbac.User{Name: rbac.ServiceAccountUsername(k.Namespace, k.ServiceAccount.Name), Groups: groups}, nil
}

// boundRef is an object a token names, of resource res in namespace ns.
type boundRef struct {
	res api.Resource
	ns  string
	ref *objectRef
}
