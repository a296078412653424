package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s/apiserver/auth"
	"minik8s/apiserver/authz"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// serviceAccountToken serves POST .../serviceaccounts/NAME/token.
func (h *handlers) serviceAccountToken(c *gin.Context) {
	var req api.TokenRequest
	if err := h.decodeBody(c, &req); err != nil {
		fail(c, err)
		return
	}
	ns, name := h.ns(c), c.Param("name")
	if err := registry.MatchNamespace(&req.ObjectMeta, ns); err != nil {
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
	obj, err := h.reg.Get(ctx, ns, name)
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
		spec.Audiences = slices.Clone(auth.APIAudiences)
	}
	exp := int64(auth.DefaultTokenSeconds)
	if spec.ExpirationSeconds != nil {
		exp = *spec.ExpirationSeconds
	}
	if err := auth.ValidExpiration(exp); err != nil {
		fail(c, err)
		return
	}
	k := auth.PrivateClaims{Namespace: ns, ServiceAccount: auth.ObjectRef{Name: name, UID: sa.UID}}
	if err := h.srv.bindToken(ctx, ns, name, spec.BoundObjectRef, &k); err != nil {
		fail(c, err)
		return
	}
	if exp > auth.MaxTokenSeconds {
		c.Header("Warning", fmt.Sprintf(`299 - "requested expiration of %d seconds shortened to %d seconds"`, exp, auth.MaxTokenSeconds))
		exp = auth.MaxTokenSeconds
	}
	spec.ExpirationSeconds = &exp
	now := time.Now().UTC().Truncate(time.Second)
	token, err := auth.Sign(h.srv.creds.saKey, now, spec, k)
	if err != nil {
		fail(c, err)
		return
	}
	req.APIVersion, req.Kind = "authentication.k8s.io/v1", "TokenRequest"
	req.Name, req.Namespace, req.CreationTimestamp = name, ns, &now
	req.Status.Token, req.Status.ExpirationTimestamp = token, now.Add(time.Duration(exp)*time.Second)
	c.JSON(http.StatusCreated, req)
}

// bindToken fills k with the object a token of service account sa is to
// be bound to, as Kubernetes' TokenRequest does: a Pod of the namespace
// running as sa (a token of a pod also names the pod's node), a Secret of
// the namespace, or a Node; 400 for anything else, 409 when the reference
// names another UID than the object's.
func (s *Server) bindToken(ctx context.Context, ns, sa string, ref *api.BoundObjectReference, k *auth.PrivateClaims) error {
	if ref == nil {
		return nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var uid string
	switch {
	case gvk.Group == "" && gvk.Kind == api.PodsResource.Kind:
		obj, err := s.registries[api.PodsResource.Name].Get(ctx, ns, ref.Name)
		if err != nil {
			return err
		}
		pod := obj.(*api.Pod)
		if account := pod.Spec.ServiceAccountName; account != sa && (account != "" || sa != "default") {
			return errdefs.BadRequest("", "cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa)
		}
		uid, k.Pod = pod.UID, &auth.ObjectRef{Name: pod.Name, UID: pod.UID}
		if node := pod.Spec.NodeName; node != "" {
			k.Node = &auth.ObjectRef{Name: node}
			obj, err := s.registries[api.NodesResource.Name].Get(ctx, "", node)
			switch {
			case err == nil:
				k.Node.UID = obj.GetObjectMeta().UID
			case !errdefs.IsNotFound(err):
				return err
			}
		}
	case gvk.Group == "" && gvk.Kind == api.SecretsResource.Kind:
		obj, err := s.registries[api.SecretsResource.Name].Get(ctx, ns, ref.Name)
		if err != nil {
			return err
		}
		uid, k.Secret = obj.GetObjectMeta().UID, &auth.ObjectRef{Name: ref.Name, UID: obj.GetObjectMeta().UID}
	case gvk.Group == "" && gvk.Kind == api.NodesResource.Kind:
		obj, err := s.registries[api.NodesResource.Name].Get(ctx, "", ref.Name)
		if err != nil {
			return err
		}
		uid, k.Node = obj.GetObjectMeta().UID, &auth.ObjectRef{Name: ref.Name, UID: obj.GetObjectMeta().UID}
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
	node, ok := authz.NodeName(rbac.UserOf(ctx))
	if !ok {
		return nil
	}
	b := req.Spec.BoundObjectRef
	if b == nil || b.Kind != api.PodsResource.Kind {
		return fmt.Errorf("serviceaccounts %q is forbidden: node %q may ask only for tokens bound to a pod: %w", sa, node, errdefs.ErrForbidden)
	}
	obj, err := s.registries[api.PodsResource.Name].Get(ctx, ns, b.Name)
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
	// Only the audiences the pod asks for (Kubernetes'
	// ServiceAccountNodeAudienceRestriction): a node could otherwise speak
	// as the pod to any service that trusts the cluster's tokens.
	asked := podTokenAudiences(&pod.Spec)
	for _, a := range req.Spec.Audiences {
		if !asked[a] && !slices.Contains(auth.APIAudiences, a) {
			return fmt.Errorf("serviceaccounts %q is forbidden: audience %q not found in pod spec volume: %w", sa, a, errdefs.ErrForbidden)
		}
	}
	return nil
}

// podTokenAudiences are the audiences of the pod's projected service
// account tokens.
func podTokenAudiences(spec *api.PodSpec) map[string]bool {
	out := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if t := src.ServiceAccountToken; t != nil && t.Audience != "" {
				out[t.Audience] = true
			}
		}
	}
	return out
}

// verifyServiceAccountToken checks a service account's token (auth.Verify)
// against the objects the registries hold.
func (s *Server) verifyServiceAccountToken(ctx context.Context, token string) (rbac.User, error) {
	return auth.Verify(ctx, &s.creds.saKey.PublicKey, registryObjects(s.registries), token)
}

// registryObjects reads objects through the registries (auth.Objects).
type registryObjects map[string]*registry.Store

func (m registryObjects) Get(ctx context.Context, res api.Resource, ns, name string) (api.Object, error) {
	return m[res.Name].Get(ctx, ns, name)
}
