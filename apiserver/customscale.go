package apiserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// The scale subresource of a custom resource, as its CRD places it:
// replicas at specReplicasPath and statusReplicasPath, the selector at
// labelSelectorPath (simple dotted paths, as Kubernetes allows).

// scaleVersion is the served version of the request's custom resource.
func (h *handlers) scaleVersion() *customVersion {
	res := h.reg.Resource
	return h.srv.customs.lookup(res.Group, res.Version, res.Name)
}

// customScaleOf is obj's Scale.
func (h *handlers) customScaleOf(obj api.Object) (*api.Scale, error) {
	v := h.scaleVersion()
	if v == nil || v.scale == nil {
		return nil, fmt.Errorf("scale: %w", errdefs.ErrNotFound)
	}
	m, err := obj.(*api.CustomObject).Object()
	if err != nil {
		return nil, err
	}
	meta := obj.GetObjectMeta()
	sc := &api.Scale{TypeMeta: api.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: api.ObjectMeta{Name: meta.Name, Namespace: meta.Namespace, UID: meta.UID,
			ResourceVersion: meta.ResourceVersion, CreationTimestamp: meta.CreationTimestamp}}
	if n, ok := pathValue(m, v.scale.SpecReplicasPath).(int64); ok {
		sc.Spec.Replicas = int32(n)
	}
	if n, ok := pathValue(m, v.scale.StatusReplicasPath).(int64); ok {
		sc.Status.Replicas = int32(n)
	}
	if p := v.scale.LabelSelectorPath; p != nil {
		if s, ok := pathValue(m, *p).(string); ok {
			sc.Status.Selector = s
		}
	}
	return sc, nil
}

// pathValue is the value at a dotted path (".spec.replicas").
func pathValue(m map[string]any, path string) any {
	var cur any = m
	for _, p := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// setPath sets the value at a dotted path, making the maps on the way.
func setPath(m map[string]any, path string, v any) {
	parts := strings.Split(strings.TrimPrefix(path, "."), ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

func (h *handlers) getCustomScale(c *gin.Context) {
	obj, err := h.reg.Get(c.Request.Context(), h.ns(c), c.Param("name"))
	var sc *api.Scale
	if err == nil {
		sc, err = h.customScaleOf(obj)
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, sc)
}

func (h *handlers) updateCustomScale(c *gin.Context) {
	var sc api.Scale
	if err := h.decodeBody(c, &sc); err != nil {
		fail(c, err)
		return
	}
	h.setCustomScale(c, &sc)
}

func (h *handlers) patchCustomScale(c *gin.Context) {
	ctype, data, err := h.readPatch(c)
	if err != nil {
		fail(c, err)
		return
	}
	cur, err := h.reg.Get(c.Request.Context(), h.ns(c), c.Param("name"))
	var sc *api.Scale
	if err == nil {
		sc, err = h.customScaleOf(cur)
	}
	var out api.Scale
	if err == nil {
		gvk := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
		err = patchInto(ctype, sc, data, gvk, &out)
	}
	if err != nil {
		fail(c, err)
		return
	}
	h.setCustomScale(c, &out)
}

// setCustomScale writes the replicas of a scale into its object, which
// its schema then judges as any update.
func (h *handlers) setCustomScale(c *gin.Context, sc *api.Scale) {
	name := c.Param("name")
	if err := h.checkScale(c, sc); err != nil {
		fail(c, err)
		return
	}
	v := h.scaleVersion()
	ctx := c.Request.Context()
	cur, err := h.reg.Get(ctx, h.ns(c), name)
	if err == nil && v == nil {
		err = fmt.Errorf("scale: %w", errdefs.ErrNotFound)
	}
	var m map[string]any
	if err == nil {
		m, err = cur.(*api.CustomObject).Object()
	}
	if err != nil {
		fail(c, err)
		return
	}
	setPath(m, v.scale.SpecReplicasPath, int64(sc.Spec.Replicas))
	next := &api.CustomObject{}
	if err := next.SetObject(m); err != nil {
		fail(c, err)
		return
	}
	if sc.ResourceVersion != "" {
		next.ResourceVersion = sc.ResourceVersion
	}
	out, err := h.reg.Update(ctx, h.ns(c), name, next)
	var res *api.Scale
	if err == nil {
		res, err = h.customScaleOf(out)
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

// deleteCollection deletes the objects a list would show (custom
// resources: kubectl delete --all).
func (h *handlers) deleteCollection(c *gin.Context) {
	opts, err := h.deleteOptions(c)
	if err != nil {
		fail(c, err)
		return
	}
	// The selectors say which objects, as on a list.
	q := c.Request.URL.Query()
	lq := url.Values{}
	for _, k := range []string{"labelSelector", "fieldSelector"} {
		if v, ok := q[k]; ok {
			lq[k] = v
		}
	}
	lo, err := decodeQuery(queryList, lq)
	var f registry.Filter
	if err == nil {
		f, err = registry.FilterOf(lo.list)
	}
	if err != nil {
		fail(c, err)
		return
	}
	reg, err := h.registryFor(c, opts.DryRun...)
	if err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	objs, rev, err := h.reg.List(ctx, h.ns(c), f)
	if err != nil {
		fail(c, err)
		return
	}
	var gone []api.Object
	for _, o := range objs {
		m := o.GetObjectMeta()
		out, err := reg.Delete(ctx, m.Namespace, m.Name, opts)
		if err != nil && !errdefs.IsNotFound(err) {
			fail(c, err)
			return
		}
		if out != nil {
			gone = append(gone, out)
		}
	}
	c.JSON(http.StatusOK, h.listBody(gone, rev))
}
