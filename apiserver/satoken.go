package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// Service account tokens are JWTs the apiserver signs (ES256) and checks,
// asked for through the TokenRequest subresource
// (POST .../serviceaccounts/NAME/token) as the kubelet does for the pods
// it runs. A token holds while its service account exists with the same
// UID.

const (
	saIssuer   = "https://kubernetes.default.svc.cluster.local"
	saAudience = "minik8s"
	// Token lifetimes: asked for (expirationSeconds), within bounds.
	defaultTokenTTL = time.Hour
	minTokenTTL     = 10 * time.Minute
	maxTokenTTL     = 48 * time.Hour
)

type saClaims struct {
	jwt.RegisteredClaims
	Kubernetes struct {
		Namespace      string `json:"namespace"`
		ServiceAccount struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"serviceaccount"`
		Pod *boundPod `json:"pod,omitempty"`
	} `json:"kubernetes.io"`
}

type boundPod struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
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
	ttl := defaultTokenTTL
	if e := req.Spec.ExpirationSeconds; e != nil {
		ttl = min(max(time.Duration(*e)*time.Second, minTokenTTL), maxTokenTTL)
	}
	now := time.Now().UTC().Truncate(time.Second)
	claims := saClaims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: saIssuer, Subject: rbac.ServiceAccountUsername(ns, name), Audience: jwt.ClaimStrings{saAudience},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	claims.Kubernetes.Namespace = ns
	claims.Kubernetes.ServiceAccount.Name, claims.Kubernetes.ServiceAccount.UID = name, sa.UID
	if b := req.Spec.BoundObjectRef; b != nil && b.Kind == api.PodsResource.Kind {
		claims.Kubernetes.Pod = &boundPod{b.Name, b.UID}
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodES256, claims).SignedString(h.srv.creds.saKey)
	if err != nil {
		fail(c, err)
		return
	}
	req.APIVersion, req.Kind = "authentication.k8s.io/v1", "TokenRequest"
	req.Name, req.Namespace = name, ns
	req.Status.Token, req.Status.ExpirationTimestamp = token, now.Add(ttl)
	c.JSON(http.StatusCreated, req)
}

// verifyServiceAccountToken checks a service account's token: signature,
// time, audience, and that its account still exists with the same UID.
func (s *Server) verifyServiceAccountToken(ctx context.Context, token string) (rbac.User, error) {
	var claims saClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		return &s.creds.saKey.PublicKey, nil
	}, jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}), jwt.WithIssuer(saIssuer), jwt.WithAudience(saAudience))
	if err != nil {
		return rbac.User{}, fmt.Errorf("service account token: %v: %w", err, errdefs.ErrUnauthorized)
	}
	k := claims.Kubernetes
	obj, err := s.registries[api.ServiceAccountsResource.Name].get(ctx, k.Namespace, k.ServiceAccount.Name)
	if err != nil || obj.GetObjectMeta().UID != k.ServiceAccount.UID {
		return rbac.User{}, fmt.Errorf("service account %s/%s of the token no longer exists: %w", k.Namespace, k.ServiceAccount.Name, errdefs.ErrUnauthorized)
	}
	if p := k.Pod; p != nil {
		pod, err := s.registries[api.PodsResource.Name].get(ctx, k.Namespace, p.Name)
		if err != nil || pod.GetObjectMeta().UID != p.UID {
			return rbac.User{}, fmt.Errorf("pod %s/%s the token was bound to no longer exists: %w", k.Namespace, p.Name, errdefs.ErrUnauthorized)
		}
	}
	groups := append(rbac.ServiceAccountGroups(k.Namespace), rbac.AllAuthenticated)
	return rbac.User{Name: rbac.ServiceAccountUsername(k.Namespace, k.ServiceAccount.Name), Groups: groups}, nil
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
