package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// The patch types (a PATCH's Content-Type), as Kubernetes names them.
const (
	jsonPatchType      = "application/json-patch+json"
	mergePatchType     = "application/merge-patch+json"
	strategicPatchType = "application/strategic-merge-patch+json"
)

// patchRetries bounds the retries of a patch whose object changed between
// its read and its write: the patch is applied again to the new version.
const patchRetries = 5

// patchDoc applies a patch of type ctype to doc, an object's JSON. A
// strategic merge patch needs the merge keys of the object's Kubernetes
// type (containers by name, ports by containerPort…); own is the object's
// type here, for the kinds that are not Kubernetes'.
func patchDoc(ctype string, doc, patch []byte, gvk schema.GroupVersionKind, own any) ([]byte, error) {
	switch ctype {
	case jsonPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, errdefs.BadRequest("", "malformed JSON patch: %v", err)
		}
		out, err := p.Apply(doc)
		if err != nil {
			return nil, errdefs.Invalid("", "the JSON patch does not apply: %v", err)
		}
		return out, nil
	case mergePatchType:
		out, err := jsonpatch.MergePatch(doc, patch)
		if err != nil {
			return nil, errdefs.BadRequest("", "malformed merge patch: %v", err)
		}
		return out, nil
	case strategicPatchType:
		// Kubernetes' own type knows the merge keys; the kinds that are
		// not Kubernetes' have none, and their lists are replaced, as a
		// JSON merge patch would (kubectl sends strategic patches to
		// whatever kind OpenAPI describes).
		var typed any = own
		if k8s, err := scheme.Scheme.New(gvk); err == nil {
			typed = k8s
		}
		out, err := strategicpatch.StrategicMergePatch(doc, patch, typed)
		if err != nil {
			return nil, errdefs.BadRequest("", "the strategic merge patch does not apply: %v", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %q is not a patch type: send %s, %s or %s", errdefs.ErrUnsupportedMediaType, ctype, jsonPatchType, mergePatchType, strategicPatchType)
}

// patchInto applies a patch of type ctype to cur and decodes the result,
// strictly, into out, an empty object of cur's type.
func patchInto(ctype string, cur any, patch []byte, gvk schema.GroupVersionKind, out any) error {
	doc, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	patched, err := patchDoc(ctype, doc, patch, gvk, out)
	if err != nil {
		return err
	}
	return decodeStrict(patched, "application/json", out)
}

// gvk is the group, version and kind of the objects h's routes read.
func (h *handlers) gvk() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(h.groupVersion(), h.reg.Resource.Kind)
}

// writeFunc writes a patched object through a registry: the object or its
// status ((*registry).update, (*registry).updateStatus).
type writeFunc func(r *registry.Store, ctx context.Context, ns, name string, obj api.Object) (api.Object, error)

// merger makes the patched object from the stored one (nil when there
// is none: an apply that creates).
type merger func(cur api.Object) (api.Object, error)

// patch answers PATCH of an object (write: update) or of its status
// (write: updateStatus): the patch is applied to the object as stored and
// the result written as a PUT would, admission and validation included.
// A patch that leaves the resourceVersion alone applies to whatever
// version is current; one that sets it applies to that version only. An
// apply patch (server-side apply) merges by field ownership, and creates
// the object when there is none.
func (h *handlers) patch(write writeFunc, admit bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctype, data, err := h.readPatch(c)
		if err != nil {
			fail(c, err)
			return
		}
		merge, err := h.merger(c, ctype, data)
		if err != nil {
			fail(c, err)
			return
		}
		reg, err := h.registryFor(c)
		if err != nil {
			fail(c, err)
			return
		}
		ctx, ns, name := c.Request.Context(), h.ns(c), c.Param("name")
		for attempt := 0; ; attempt++ {
			out, pinned, err := h.patchOnce(ctx, reg, ns, name, merge, write, admit)
			if errors.Is(err, errdefs.ErrConflict) && !pinned && attempt < patchRetries {
				continue
			}
			if errdefs.IsNotFound(err) && ctype == applyPatchType && requestOf(c).attrs.Subresource == "" {
				h.applyCreate(c, merge)
				return
			}
			if err != nil {
				fail(c, err)
				return
			}
			h.reply(c, http.StatusOK, out)
			return
		}
	}
}

// merger is how a PATCH of type ctype makes its object. An apply records
// its fields itself; the other patches record theirs as any write does,
// under the request's manager.
func (h *handlers) merger(c *gin.Context, ctype string, patch []byte) (merger, error) {
	if ctype == applyPatchType {
		return h.applier(c, patch)
	}
	withManager(c)
	mode := fieldValidationOf(c)
	return func(cur api.Object) (api.Object, error) {
		obj := h.newObject()
		doc, err := json.Marshal(h.show(cur))
		if err != nil {
			return nil, err
		}
		patched, err := patchDoc(ctype, doc, patch, h.gvk(), obj)
		if err != nil {
			return nil, err
		}
		warnings, err := decodeFields(patched, obj, h.gvk(), mode)
		warn(c, warnings)
		if err == nil {
			warnings, err = h.customFields(obj, mode)
			warn(c, warnings)
		}
		return obj, err
	}, nil
}

// readPatch reads a PATCH: its type (415 for another), its options
// validated with it, and its body.
func (h *handlers) readPatch(c *gin.Context) (string, []byte, error) {
	ctype, err := patchMediaType(c.Request)
	if err != nil {
		return "", nil, err
	}
	if opts := requestOf(c).query.patch; opts != nil {
		if err := validatePatchOptions(opts, ctype); err != nil {
			return "", nil, err
		}
	}
	data, err := readBody(c, h.maxBody)
	return ctype, data, err
}

// patchOnce reads, patches and writes once; pinned says the patch chose
// the version it applies to.
func (h *handlers) patchOnce(ctx context.Context, reg *registry.Store, ns, name string, merge merger, write writeFunc, admit bool) (api.Object, bool, error) {
	cur, err := h.reg.Get(ctx, ns, name)
	if err != nil {
		return nil, false, err
	}
	// The patch applies to the object as the route shows it.
	obj, err := merge(cur)
	if err != nil {
		return nil, false, err
	}
	if obj, err = h.take(obj); err != nil {
		return nil, false, err
	}
	pinned := obj.GetObjectMeta().ResourceVersion != cur.GetObjectMeta().ResourceVersion
	if admit {
		if err := h.srv.admit(ctx, ns, obj); err != nil {
			return nil, pinned, err
		}
	}
	out, err := write(reg, ctx, ns, name, obj)
	return out, pinned, err
}

// patchScale answers PATCH of a ReplicaSet's or Deployment's scale
// (kubectl scale).
func (h *handlers) patchScale(c *gin.Context) {
	ctype, data, err := h.readPatch(c)
	if err != nil {
		fail(c, err)
		return
	}
	ctx, ns, name := c.Request.Context(), h.ns(c), c.Param("name")
	cur, err := h.reg.Get(ctx, ns, name)
	if err != nil {
		fail(c, err)
		return
	}
	var sc api.Scale
	gvk := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	if err := patchInto(ctype, scaleOf(cur), data, gvk, &sc); err != nil {
		fail(c, err)
		return
	}
	h.setScale(c, &sc)
}
