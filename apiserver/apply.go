package apiserver

import (
	"bytes"
	"unicode"

	"github.com/gin-gonic/gin"

	"minik8s/apiserver/fields"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Server-side apply (PATCH with an apply patch) and the field manager
// every other write records, as Kubernetes' handlers do: the merge and
// the ownership are apiserver/fields'; an applied object is then
// admitted, validated and written as any patched one.

// applyPatchType is the Content-Type of a server-side apply.
const applyPatchType = "application/apply-patch+yaml"

// withManager puts the request's field manager in its context, for the
// registry to record what it writes: the fieldManager option, or else the
// user agent's first word, as Kubernetes names it ("kubectl-edit",
// "kubelet").
func withManager(c *gin.Context) {
	manager, _ := requestOf(c).query.write()
	if manager == "" {
		manager = prefixFromUserAgent(c.Request.UserAgent())
	}
	c.Request = c.Request.WithContext(registry.WithManager(c.Request.Context(), manager))
}

// prefixFromUserAgent is Kubernetes' default manager name: the user
// agent up to its first "/", printable, at most 128 bytes.
func prefixFromUserAgent(ua string) string {
	name, _, _ := bytes.Cut([]byte(ua), []byte("/"))
	var buf bytes.Buffer
	for _, r := range string(name) {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len() >= 128 {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}

// applier merges an apply patch into the object as the route shows it.
func (h *handlers) applier(c *gin.Context, patch []byte) (merger, error) {
	res := h.resource()
	if h.groupVersion() != res.Served().GroupVersion() {
		return nil, errdefs.BadRequest("", "server-side apply of %s is served at %s", res.Kind, res.Served().Path("", ""))
	}
	opts := requestOf(c).query.patch
	force := opts.Force != nil && *opts.Force
	sub := requestOf(c).attrs.Subresource
	mode := fieldValidationOf(c)
	return func(cur api.Object) (api.Object, error) {
		var live api.Object
		if cur != nil {
			live = h.show(cur)
		}
		data, err := h.srv.fields.Apply(res, sub, live, patch, opts.FieldManager, force)
		if err != nil {
			return nil, err
		}
		// The schema refused what Kubernetes' kind does not have; a field
		// it has and minik8s's does not is refused here, named.
		obj := res.New()
		if _, err := decodeFields(data, obj, h.gvk(), validationStrict); err != nil {
			return nil, err
		}
		// A custom kind's fields its schema does not declare, as the
		// request's field validation says.
		warnings, err := h.customFields(obj, mode)
		warn(c, warnings)
		return obj, err
	}, nil
}

// applyCreate answers an apply to an object that does not exist: it is
// created from the applied configuration alone, as Kubernetes does, by a
// user who may create it.
func (h *handlers) applyCreate(c *gin.Context, merge merger) {
	// The request was authorized as a patch; a create needs create too.
	if err := h.srv.authorizeAlso(c, "create"); err != nil {
		fail(c, err)
		return
	}
	obj, err := merge(nil)
	if err == nil {
		obj, err = h.take(obj)
	}
	if err == nil {
		err = h.reg.CheckIdentity(obj, h.ns(c), c.Param("name"))
	}
	if err != nil {
		fail(c, err)
		return
	}
	h.createObject(c, obj)
}

// fieldTracker records managedFields for the registry, in the form the
// kind is served in (the function kinds' minik8s.io/v1 view), which is
// the form applies merge in.
type fieldTracker struct {
	fields *fields.Manager
	view   objectView
}

func (t fieldTracker) Update(res api.Resource, sub string, old, obj api.Object, manager string) {
	if t.view == nil {
		t.fields.Update(res, sub, old, obj, manager)
		return
	}
	shown := t.view.show(obj)
	var oldShown api.Object
	if old != nil {
		oldShown = t.view.show(old)
	}
	t.fields.Update(res, sub, oldShown, shown, manager)
	obj.GetObjectMeta().ManagedFields = shown.GetObjectMeta().ManagedFields
}
