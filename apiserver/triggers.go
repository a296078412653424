package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function/call"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage/etcd"
)

// admitTrigger checks what a trigger's validation cannot see alone: its
// function exists, and its gateway path (one gateway serves every
// namespace) is no other trigger's. Both are 422 naming the field. The
// trigger then belongs to its function (an owner reference): deleting
// the function deletes its triggers, which would otherwise stay ready
// to make calls that can only fail.
func (s *Server) admitTrigger(ctx context.Context, ns string, t *api.Trigger) error {
	f, err := s.registries[api.FuncsResource.Name].Get(ctx, ns, t.Spec.Function)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return errdefs.Invalid("spec.function", "function %q does not exist in namespace %q", t.Spec.Function, ns)
		}
		return err
	}
	ownedByFunc(&t.ObjectMeta, f)
	if t.Spec.App != "" {
		if _, err := s.registries[api.AppsResource.Name].Get(ctx, ns, t.Spec.App); err != nil {
			if errdefs.IsNotFound(err) {
				return errdefs.Invalid("spec.app", "app %q does not exist in namespace %q", t.Spec.App, ns)
			}
			return err
		}
	}
	if t.Spec.HTTP == nil {
		return nil
	}
	objs, _, err := s.registries[api.TriggersResource.Name].List(ctx, "", registry.Filter{})
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

// ownedByFunc makes f the one Func among m's owners.
func ownedByFunc(m *api.ObjectMeta, f api.Object) {
	refs := slices.DeleteFunc(m.OwnerReferences, func(r api.OwnerReference) bool { return r.Kind == api.FuncsResource.Kind })
	fm := f.GetObjectMeta()
	m.OwnerReferences = append(refs, api.OwnerReference{APIVersion: api.FuncsResource.GroupVersion(), Kind: api.FuncsResource.Kind, Name: fm.Name, UID: fm.UID})
}

// createTriggerRecord serves a REST create of a FuncInstance, which only
// the record of a call a trigger started, or a call's step sent through
// an output, may be: a function runner (or the admin) stores it, naming
// the trigger or the parent call (the gateway's calls do not pass through
// the apiserver). Anything else would claim a call that never ran: 405,
// as before.
func (h *handlers) createTriggerRecord(c *gin.Context) {
	u := rbac.UserOf(c.Request.Context())
	if !slices.Contains(u.Groups, rbac.FuncRunnersGroup) && !slices.Contains(u.Groups, rbac.Masters) {
		refuseInstanceWrite(c)
		return
	}
	ctype, err := bodyMediaType(c)
	if err != nil {
		fail(c, err)
		return
	}
	// A record holds an argument and a result at their limits.
	data, err := readBody(c, max(h.maxBody, etcd.MaxRequestBytes))
	if err != nil {
		fail(c, err)
		return
	}
	var kind struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(data, &kind)
	if kind.Kind == api.FuncInstancesResource.Kind+"List" {
		h.createTriggerRecords(c, data)
		return
	}
	inst := &api.FuncInstance{}
	if err = decodeStrict(data, ctype, inst); err == nil {
		_, err = h.take(inst)
	}
	if err == nil {
		err = h.reg.CheckIdentity(inst, h.ns(c), "")
	}
	if err != nil {
		fail(c, err)
		return
	}
	if (inst.Spec.Trigger == nil || inst.Spec.Trigger.Name == "") && (inst.Spec.Parent == nil || inst.Spec.Parent.Instance == "") {
		refuseInstanceWrite(c)
		return
	}
	out, err := h.reg.Create(c.Request.Context(), h.ns(c), inst)
	if err != nil {
		fail(c, err)
		return
	}
	h.reply(c, http.StatusCreated, out)
}

// createTriggerRecords takes the records of many ended calls of triggers
// (a FuncInstanceList) at once, as the apiserver takes those of its own
// synchronous calls: 202 once they are queued, stored in batches, and
// served by GET from memory until then. A gateway under load sends one
// request for many calls instead of one each.
func (h *handlers) createTriggerRecords(c *gin.Context, data []byte) {
	list := &api.FuncInstanceList{}
	if err := decodeStrict(data, "application/json", list); err != nil {
		fail(c, err)
		return
	}
	ns := h.ns(c)
	for i := range list.Items {
		inst := &list.Items[i]
		field := fmt.Sprintf("items[%d]", i)
		if _, err := h.take(inst); err != nil {
			fail(c, fmt.Errorf("%s: %w", field, err))
			return
		}
		switch {
		case inst.Spec.Trigger == nil || inst.Spec.Trigger.Name == "":
			fail(c, errdefs.Invalid(field+".spec.trigger", "a record names the trigger that made the call"))
			return
		case !call.Terminal(inst):
			fail(c, errdefs.Invalid(field+".status.phase", "only ended calls are taken in a list, not %q", inst.Status.Phase))
			return
		case inst.Namespace != "" && inst.Namespace != ns:
			fail(c, errdefs.BadRequest(field+".metadata.namespace", "the namespace of the provided object does not match the namespace sent on the request"))
			return
		case inst.Name == "":
			fail(c, errdefs.Invalid(field+".metadata.name", "the instance id is required"))
			return
		}
	}
	if err := h.srv.calls.AcceptRecords(c.Request.Context(), ns, list.Items); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"accepted": len(list.Items)})
}
