package apiserver

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/api/validation/upstream"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function/call"
	"minik8s/pkg/storage/etcd"
)

// updateInstanceStatus serves PUT .../funcinstances/NAME/status, how
// function runners claim and advance instances. It is compare-and-swap on
// the resourceVersion the runner read, so two runners never both record a
// step; a finished instance is final, and every write names its runner.
func (h *handlers) updateInstanceStatus(c *gin.Context) {
	next := &api.FuncInstance{}
	hh := *h
	hh.maxBody = etcd.MaxRequestBytes
	err := hh.decodeBody(c, next)
	if err == nil {
		_, err = h.take(next)
	}
	if err != nil {
		fail(c, err)
		return
	}
	name := c.Param("name")
	if err := registry.MatchNamespace(&next.ObjectMeta, h.ns(c)); err != nil {
		fail(c, err)
		return
	}
	if err := registry.MatchName(&next.ObjectMeta, name); err != nil {
		fail(c, err)
		return
	}
	if next.ResourceVersion == "" {
		fail(c, errdefs.Invalid("metadata.resourceVersion", "required: a runner writes the instance it read"))
		return
	}
	wantRV := next.ResourceVersion
	update := func(o api.Object) (api.Object, error) {
		cur := o.(*api.FuncInstance)
		if wantRV != cur.ResourceVersion {
			return nil, fmt.Errorf("FuncInstance %q: resourceVersion %s is stale (now %s): %w", name, wantRV, cur.ResourceVersion, errdefs.ErrConflict)
		}
		if err := call.SetStatus(cur, next); err != nil {
			return nil, err
		}
		if err := upstream.Invalid(h.reg.Resource, name, validation.Status(cur)); err != nil {
			return nil, err
		}
		return cur, nil
	}
	ctx, ns := c.Request.Context(), h.ns(c)
	var out api.Object
	if cur, ok := h.reg.Cache.LatestAt(ns, name, wantRV); ok {
		// The runner wrote what the cache holds: no read before the write.
		out, err = h.reg.MutateFrom(ctx, cur, update)
	} else {
		out, err = h.reg.Mutate(ctx, ns, name, update)
	}
	if err != nil {
		fail(c, err)
		return
	}
	h.reply(c, http.StatusOK, out)
}
