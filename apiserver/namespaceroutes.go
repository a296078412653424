package apiserver

import (
	"fmt"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"net/http"

	"github.com/gin-gonic/gin"
)

// finalizeNamespace serves PUT /api/v1/namespaces/NAME/finalize: the
// namespace controller drops its finalizer once the namespace is empty,
// and a terminating namespace without finalizers is removed.
func (h *handlers) finalizeNamespace(c *gin.Context) {
	next := &api.Namespace{}
	if err := h.decodeBody(c, next); err != nil {
		fail(c, err)
		return
	}
	name := c.Param("name")
	if err := registry.MatchName(next.GetObjectMeta(), name); err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	var done bool
	out, err := h.reg.Mutate(ctx, "", name, func(o api.Object) (api.Object, error) {
		ns := o.(*api.Namespace)
		if next.ResourceVersion != "" && next.ResourceVersion != ns.ResourceVersion {
			return nil, fmt.Errorf("namespace %q: resourceVersion %s is stale: %w", name, next.ResourceVersion, errdefs.ErrConflict)
		}
		ns.Spec.Finalizers = next.Spec.Finalizers
		done = ns.DeletionTimestamp != nil && len(ns.Spec.Finalizers) == 0
		return ns, nil
	})
	if err == nil && done {
		out, err = h.reg.RemoveFinalized(ctx, name)
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}
