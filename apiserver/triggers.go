package apiserver

import (
	"context"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// admitTrigger checks what a trigger's validation cannot see alone: its
// function exists, and its gateway path (one gateway serves every
// namespace) is no other trigger's. Both are 422 naming the field.
func (s *Server) admitTrigger(ctx context.Context, ns string, t *api.Trigger) error {
	if _, err := s.registries[api.FuncsResource.Name].get(ctx, ns, t.Spec.Function); err != nil {
		if errdefs.IsNotFound(err) {
			return errdefs.Invalid("spec.function", "function %q does not exist in namespace %q", t.Spec.Function, ns)
		}
		return err
	}
	if t.Spec.App != "" {
		if _, err := s.registries[api.AppsResource.Name].get(ctx, ns, t.Spec.App); err != nil {
			if errdefs.IsNotFound(err) {
				return errdefs.Invalid("spec.app", "app %q does not exist in namespace %q", t.Spec.App, ns)
			}
			return err
		}
	}
	if t.Spec.HTTP == nil {
		return nil
	}
	objs, _, err := s.registries[api.TriggersResource.Name].list(ctx, "", filter{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		other := o.(*api.Trigger)
		if other.Spec.HTTP == nil || (other.Namespace == ns && other.Name == t.Name) {
			continue
		}
		if other.Spec.HTTP.Path == t.Spec.HTTP.Path {
			return errdefs.Invalid("spec.http.path", "%q is already taken by trigger %s/%s", t.Spec.HTTP.Path, other.Namespace, other.Name)
		}
	}
	return nil
}

// createTriggerRecord serves a REST create of a FuncInstance, which only
// the record of a call a trigger started may be: a function runner (or
// the admin) stores it, naming the trigger, once it ran the call itself
// (the gateway's calls do not pass through the apiserver). Anything else
// would claim a call that never ran: 405, as before.
func (h *handlers) createTriggerRecord(c *gin.Context) {
	u := userOf(c.Request.Context())
	if !slices.Contains(u.Groups, rbac.FuncRunnersGroup) && !slices.Contains(u.Groups, rbac.Masters) {
		refuseInstanceWrite(c)
		return
	}
	inst := &api.FuncInstance{}
	if err := h.decodeBody(c, inst); err != nil {
		fail(c, err)
		return
	}
	if inst.Spec.Trigger == nil || inst.Spec.Trigger.Name == "" {
		refuseInstanceWrite(c)
		return
	}
	out, err := h.reg.create(c.Request.Context(), h.ns(c), inst)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, out)
}
