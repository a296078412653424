// Package auth holds the apiserver's authentication that needs no
// server: service account tokens, signed and checked.
package auth

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// Service account tokens are JWTs the apiserver signs (ES256) and checks,
// asked for through the TokenRequest subresource
// (POST .../serviceaccounts/NAME/token) as the kubelet does for the pods
// it runs, with Kubernetes' rules (its pkg/serviceaccount and
// pkg/registry/core/serviceaccount/storage/token.go): a token names the
// audiences asked for (the apiserver's own when none) and the apiserver
// takes only those naming one of its own; it holds from its nbf to its exp
// (required) while its service account, and the pod, secret or node it is
// bound to, exist with the same UID.

const (
	// Issuer is the tokens' issuer (iss), Kubernetes' default.
	Issuer = "https://kubernetes.default.svc.cluster.local"
	// Lifetimes asked for (expirationSeconds), as Kubernetes bounds them:
	// one hour unless asked, 10 minutes at least and 2^32 s at most (422
	// beyond: ValidateTokenRequest), cut to the apiserver's maximum (its
	// --service-account-max-token-expiration) when asked for more.
	DefaultTokenSeconds  = 60 * 60
	minTokenSeconds      = 10 * 60
	maxTokenSecondsAsked = 1 << 32
	MaxTokenSeconds      = 48 * 60 * 60
	// Leeway is the clock skew a token's times are given, and how long
	// a bound object marked deleted still carries it (go-jose's
	// jwt.DefaultLeeway, which Kubernetes uses).
	Leeway = time.Minute
)

// APIAudiences are the apiserver's own audiences (Kubernetes'
// --api-audiences, which default to the issuer): a token asked for
// without audiences names them, and only a token naming one of them
// authenticates here. "minik8s" is the audience of the tokens minik8s gave
// before, as k3s adds "k3s" to the issuer.
var APIAudiences = []string{Issuer, "minik8s"}

// Claims are a service account token's claims.
type Claims struct {
	jwt.RegisteredClaims
	Kubernetes PrivateClaims `json:"kubernetes.io"`
}

// PrivateClaims are Kubernetes' "kubernetes.io" claims: the account, and
// what the token is bound to (a pod's token names its node too).
type PrivateClaims struct {
	Namespace      string     `json:"namespace"`
	ServiceAccount ObjectRef  `json:"serviceaccount"`
	Pod            *ObjectRef `json:"pod,omitempty"`
	Secret         *ObjectRef `json:"secret,omitempty"`
	Node           *ObjectRef `json:"node,omitempty"`
}

// ObjectRef names an object a token is of or bound to.
type ObjectRef struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
}

// Objects reads the objects a token names (the apiserver's registries).
type Objects interface {
	Get(ctx context.Context, res api.Resource, ns, name string) (api.Object, error)
}

// Sign signs with key the token spec asks for (audiences and lifetime
// set), of the account and bound objects k names, issued at now.
func Sign(key *ecdsa.PrivateKey, now time.Time, spec *api.TokenRequestSpec, k PrivateClaims) (string, error) {
	claims := Claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: Issuer, Subject: rbac.ServiceAccountUsername(k.Namespace, k.ServiceAccount.Name), Audience: jwt.ClaimStrings(spec.Audiences),
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(time.Duration(*spec.ExpirationSeconds) * time.Second)), ID: uuid.NewString(),
	}, Kubernetes: k}
	return jwt.NewWithClaims(jwt.SigningMethodES256, claims).SignedString(key)
}

// ValidExpiration is Kubernetes' ValidateTokenRequest of
// expirationSeconds: 422 under 10 minutes (negative ones included) and
// over 2^32 seconds (so that no lifetime overflows a time.Duration).
func ValidExpiration(exp int64) error {
	switch {
	case exp < minTokenSeconds:
		return errdefs.Invalid("spec.expirationSeconds", "Invalid value: %d: may not specify a duration less than 10 minutes", exp)
	case exp > maxTokenSecondsAsked:
		return errdefs.Invalid("spec.expirationSeconds", "Invalid value: %d: may not specify a duration larger than 2^32 seconds", exp)
	}
	return nil
}

// Verify checks a service account's token as
// Kubernetes' JWT authenticator and validator do: its signature and
// issuer; an audience of the apiserver's own; its exp (required, "no exp,
// no entry"), nbf and iat within a minute's leeway; and that its service
// account, and the pod, secret or node it is bound to, exist with the
// UIDs it names (in objs) and were not deleted more than the leeway ago.
func Verify(ctx context.Context, key *ecdsa.PublicKey, objs Objects, token string) (rbac.User, error) {
	var claims Claims
	_, err := jwt.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		return key, nil
	}, jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}), jwt.WithIssuer(Issuer),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(Leeway))
	if err != nil {
		return rbac.User{}, fmt.Errorf("service account token: %v: %w", err, errdefs.ErrUnauthorized)
	}
	if !slices.ContainsFunc(claims.Audience, func(a string) bool { return slices.Contains(APIAudiences, a) }) {
		return rbac.User{}, fmt.Errorf("service account token: token audiences %q is invalid for the target audiences %q: %w",
			[]string(claims.Audience), APIAudiences, errdefs.ErrUnauthorized)
	}
	k := claims.Kubernetes
	deletedBefore := time.Now().Add(-Leeway)
	// holds says whether the object the token names is still there as named.
	holds := func(res api.Resource, ns string, ref *ObjectRef) bool {
		obj, err := objs.Get(ctx, res, ns, ref.Name)
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
	ref *ObjectRef
}
