package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	saIssuer = "https://kubernetes.default.svc.cluster.local"
	// Lifetimes asked for (expirationSeconds), as Kubernetes bounds them:
	// one hour unless asked, 10 minutes at least and 2^32 s at most (422
	// beyond: ValidateTokenRequest), cut to the apiserver's maximum (its
	// --service-account-max-token-expiration) when asked for more.
	defaultTokenSeconds  = 60 * 60
	minTokenSeconds      = 10 * 60
	maxTokenSecondsAsked = 1 << 32
	maxTokenSeconds      = 48 * 60 * 60
	// tokenLeeway is the clock skew a token's times are given, and how long
	// a bound object marked deleted still carries it (go-jose's
	// jwt.DefaultLeeway, which Kubernetes uses).
	tokenLeeway = time.Minute
)

// apiAudiences are the apiserver's own audiences (Kubernetes'
// --api-audiences, which default to the issuer): a token asked for
// without audiences names them, and only a token naming one of them
// authenticates here. "minik8s" is the audience of the tokens minik8s gave
// before, as k3s adds "k3s" to the issuer.
var apiAudiences = []string{saIssuer, "minik8s"}

type saClaims struct {
	jwt.RegisteredClaims
	Kubernetes saPrivateClaims `json:"kubernetes.io"`
}

// saPrivateClaims are Kubernetes' "kubernetes.io" claims: the account, and
// what the token is bound to (a pod's token names its node too).
type saPrivateClaims struct {
	Namespace      string     `json:"namespace"`
	ServiceAccount objectRef  `json:"serviceaccount"`
	Pod            *objectRef `json:"pod,omitempty"`
	Secret         *objectRef `json:"secret,omitempty"`
	Node           *objectRef `json:"node,omitempty"`
}

type objectRef struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
}

// serviceAccountToken serves POST .../serviceaccounts/NAME/token.
func (h *handlers) serviceAccountToken(c *gin.Context) {
	var req api.TokenRequest
	if err := h.decodeBody(c, &req); err != nil {
		fail(c, err)
		return
	}
	ns, name := h.ns(c), c.Param("name")
	if err := matchNamespace(&req.ObjectMeta, ns); err != nil {
		fail(c, err)
		return
	}
	if req.Name != "" && req.Name != name {
		fail(c, errdefs.Invalid("metadata.name", "Invalid value: %q: must match the service account name if specified", req.Name))
		return
	}
	ctx := c.Request.Context()
	if h.srv.creds == nil {
		fail(c, fmt.Errorf("this apiserver serves no secure port, where tokens are used: %w", errdefs.ErrNotFound))
		return
	}
	obj, err := h.reg.get(ctx, ns, name)
	if err != nil {
		fail(c, err)
		return
	}
	sa := obj.(*api.ServiceAccount)
	if err := h.srv.nodeMayAskToken(ctx, ns, name, &req); err != nil {
		fail(c, err)
		return
	}
	spec := &req.Spec
	if len(spec.Audiences) == 0 {
		spec.Audiences = slices.Clone(apiAudiences)
	}
	exp := int64(defaultTokenSeconds)
	if spec.ExpirationSeconds != nil {
		exp = *spec.ExpirationSeconds
	}
	if err := validTokenExpiration(exp); err != nil {
		fail(c, err)
		return
	}
	k := saPrivateClaims{Namespace: ns, ServiceAccount: objectRef{name, sa.UID}}
	if err := h.srv.bindToken(ctx, ns, name, spec.BoundObjectRef, &k); err != nil {
		fail(c, err)
		return
	}
	if exp > maxTokenSeconds {
		c.Header("Warning", fmt.Sprintf(`299 - "requested expiration of %d seconds shortened to %d seconds"`, exp, maxTokenSeconds))
		exp = maxTokenSeconds
	}
	spec.ExpirationSeconds = &exp
	now := time.Now().UTC().Truncate(time.Second)
	token, err := h.srv.signToken(now, spec, k)
	if err != nil {
		fail(c, err)
		return
	}
	req.APIVersion, req.Kind = "authentication.k8s.io/v1", "TokenRequest"
	req.Name, req.Namespace, req.CreationTimestamp = name, ns, &now
	req.Status.Token, req.Status.ExpirationTimestamp = token, now.Add(time.Duration(exp)*time.Second)
	c.JSON(http.StatusCreated, req)
}

// signToken signs the token spec asks for (audiences and lifetime set),
// of the account and bound objects k names, issued at now.
func (s *Server) signToken(now time.Time, spec *api.TokenRequestSpec, k saPrivateClaims) (string, error) {
	claims := saClaims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: saIssuer, Subject: rbac.ServiceAccountUsername(k.Namespace, k.ServiceAccount.Name), Audience: jwt.ClaimStrings(spec.Audiences),
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(time.Duration(*spec.ExpirationSeconds) * time.Second)), ID: uuid.NewString(),
	}, Kubernetes: k}
	return jwt.NewWithClaims(jwt.SigningMethodES256, claims).SignedString(s.creds.saKey)
}

// validTokenExpiration is Kubernetes' ValidateTokenRequest of
// expirationSeconds: 422 under 10 minutes (negative ones included) and
// over 2^32 seconds (so that no lifetime overflows a time.Duration).
func validTokenExpiration(exp int64) error {
	switch {
	case exp < minTokenSeconds:
		return errdefs.Invalid("spec.expirationSeconds", "Invalid value: %d: may not specify a duration less than 10 minutes", exp)
	case exp > maxTokenSecondsAsked:
		return errdefs.Invalid("spec.expirationSeconds", "Invalid value: %d: may not specify a duration larger than 2^32 seconds", exp)
	}
	return nil
}

// bindToken fills k with the object a token of service account sa is to
// be bound to, as Kubernetes' TokenRequest does: a Pod of the namespace
// running as sa (a token of a pod also names the pod's node), a Secret of
// the namespace, or a Node; 400 for anything else, 409 when the reference
// names another UID than the object's.
func (s *Server) bindToken(ctx context.Context, ns, sa string, ref *api.BoundObjectReference, k *saPrivateClaims) error {
	if ref == nil {
		return nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var uid string
	switch {
	case gvk.Group == "" && gvk.Kind == api.PodsResource.Kind:
		obj, err := s.registries[api.PodsResource.Name].get(ctx, ns, ref.Name)
		if err != nil {
			return err
		}
		pod := obj.(*api.Pod)
		if account := pod.Spec.ServiceAccountName; account != sa && (account != "" || sa != "default") {
			return errdefs.BadRequest("", "cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa)
		}
		uid, k.Pod = pod.UID, &objectRef{pod.Name, pod.UID}
		if node := pod.Spec.NodeName; node != "" {
			k.Node = &objectRef{Name: node}
			obj, err := s.registries[api.NodesResource.Name].get(ctx, "", node)
			switch {
			case err == nil:
				k.Node.UID = obj.GetObjectMeta().UID
			case !errdefs.IsNotFound(err):
				return err
			}
		}
	case gvk.Group == "" && gvk.Kind == api.SecretsResource.Kind:
		obj, err := s.registries[api.SecretsResource.Name].get(ctx, ns, ref.Name)
		if err != nil {
			return err
		}
		uid, k.Secret = obj.GetObjectMeta().UID, &objectRef{ref.Name, obj.GetObjectMeta().UID}
	case gvk.Group == "" && gvk.Kind == api.NodesResource.Kind:
		obj, err := s.registries[api.NodesResource.Name].get(ctx, "", ref.Name)
		if err != nil {
			return err
		}
		uid, k.Node = obj.GetObjectMeta().UID, &objectRef{ref.Name, obj.GetObjectMeta().UID}
	default:
		return errdefs.BadRequest("spec.boundObjectRef", "cannot bind token to object of type %s", gvk.String())
	}
	if ref.UID != "" && ref.UID != uid {
		return fmt.Errorf("Operation cannot be fulfilled on %s %q: the UID in the bound object reference (%s) does not match the UID in record. "+
			"The object might have been deleted and then recreated: %w", gvk.Kind, ref.Name, ref.UID, errdefs.ErrConflict)
	}
	return nil
}

// nodeMayAskToken keeps a kubelet to the tokens of the pods bound to it:
// the request must name such a pod, running as that service account.
func (s *Server) nodeMayAskToken(ctx context.Context, ns, sa string, req *api.TokenRequest) error {
	node, ok := nodeName(userOf(ctx))
	if !ok {
		return nil
	}
	b := req.Spec.BoundObjectRef
	if b == nil || b.Kind != api.PodsResource.Kind {
		return fmt.Errorf("serviceaccounts %q is forbidden: node %q may ask only for tokens bound to a pod: %w", sa, node, errdefs.ErrForbidden)
	}
	obj, err := s.registries[api.PodsResource.Name].get(ctx, ns, b.Name)
	if err != nil {
		return err
	}
	pod := obj.(*api.Pod)
	account := pod.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	if pod.Spec.NodeName != node || account != sa || (b.UID != "" && b.UID != pod.UID) {
		return fmt.Errorf("serviceaccounts %q is forbidden: pod %q is not a pod of node %q running as this service account: %w",
			sa, b.Name, node, errdefs.ErrForbidden)
	}
	return nil
}
