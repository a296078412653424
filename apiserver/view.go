package apiserver

import (
	"github.com/gin-gonic/gin"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// objectView is how the routes of a group show objects stored in another
// form: the minik8s.io/v1 routes show the function kinds, stored in their
// reference form, as kubectl and client-go expect them.
type objectView interface {
	// groupVersion is the apiVersion the view's objects carry.
	groupVersion() string
	// show returns obj as the view shows it, a copy when it differs: the
	// registry's objects are shared.
	show(obj api.Object) api.Object
	// take turns a body written in the view into the stored form, in place.
	take(obj api.Object) error
}

// funcGroupView is the minik8s.io/v1 view (pkg/function.ToView for Funcs;
// the other kinds differ in their apiVersion only).
type funcGroupView struct{}

var _ objectView = funcGroupView{}

func (funcGroupView) groupVersion() string { return api.FuncGroupVersion }

func (funcGroupView) show(obj api.Object) api.Object {
	switch o := obj.(type) {
	case *api.Func:
		return function.ToView(o)
	case *api.FuncInstance:
		c := *o
		c.APIVersion = api.FuncGroupVersion
		return &c
	case *api.Trigger:
		c := *o
		c.APIVersion = api.FuncGroupVersion
		return &c
	case *api.App:
		c := *o
		c.APIVersion = api.FuncGroupVersion
		return &c
	}
	return obj
}

func (funcGroupView) take(obj api.Object) error {
	if f, ok := obj.(*api.Func); ok {
		return function.FromView(f)
	}
	tm := obj.GetTypeMeta()
	if tm.APIVersion != "" && tm.APIVersion != api.FuncGroupVersion {
		return errdefs.BadRequest("apiVersion", "%q is not %s, the version of this route", tm.APIVersion, api.FuncGroupVersion)
	}
	tm.APIVersion = ""
	return nil
}

// show is obj as h's routes show it.
func (h *handlers) show(obj api.Object) api.Object {
	if h.view == nil || obj == nil {
		return obj
	}
	return h.view.show(obj)
}

// take turns a body read on h's routes into the stored form.
func (h *handlers) take(obj api.Object) error {
	if h.view == nil {
		return nil
	}
	return h.view.take(obj)
}

// groupVersion is the apiVersion of the objects and lists h's routes serve.
func (h *handlers) groupVersion() string {
	if h.view == nil {
		return h.reg.Resource.GroupVersion()
	}
	return h.view.groupVersion()
}

// reply answers with obj as h's routes show it.
func (h *handlers) reply(c *gin.Context, code int, obj api.Object) {
	c.JSON(code, h.show(obj))
}
