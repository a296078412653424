package apiserver

import (
	log "github.com/sirupsen/logrus"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/api"
	"minik8s/pkg/api/conversion"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// objectView is how the routes of a group or version show objects stored
// in another form: the minik8s.io/v1 routes show the function kinds,
// stored in their reference form, as kubectl and client-go expect them;
// the autoscaling/v1 routes show the HPAs stored as autoscaling/v2.
type objectView interface {
	// groupVersion is the apiVersion the view's objects carry.
	groupVersion() string
	// newObject is an empty object of the form bodies are written in.
	newObject() api.Object
	// show returns obj as the view shows it, a copy when it differs: the
	// registry's objects are shared.
	show(obj api.Object) api.Object
	// take turns a body written in the view (one newObject made) into the
	// stored form: obj itself, changed, or a new object.
	take(obj api.Object) (api.Object, error)
	// resource is the kind in the view's version, whose field manager
	// applies in it.
	resource() api.Resource
}

// funcGroupView is the minik8s.io/v1 view (pkg/function.ToView for Funcs;
// the other kinds differ in their apiVersion only).
type funcGroupView struct{ res api.Resource }

var _ objectView = funcGroupView{}

func (funcGroupView) groupVersion() string { return api.FuncGroupVersion }

func (v funcGroupView) newObject() api.Object { return v.res.New() }

func (v funcGroupView) resource() api.Resource { return v.res }

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
	case *api.FuncRevision:
		return function.RevisionToView(o)
	}
	return obj
}

func (funcGroupView) take(obj api.Object) (api.Object, error) {
	if f, ok := obj.(*api.Func); ok {
		return f, function.FromView(f)
	}
	tm := obj.GetTypeMeta()
	if tm.APIVersion != "" && tm.APIVersion != api.FuncGroupVersion {
		return nil, errdefs.BadRequest("apiVersion", "%q is not %s, the version of this route", tm.APIVersion, api.FuncGroupVersion)
	}
	tm.APIVersion = ""
	return obj, nil
}

// hpaV1View is autoscaling/v1 (pkg/api/conversion).
type hpaV1View struct{}

var _ objectView = hpaV1View{}

func (hpaV1View) groupVersion() string { return api.HorizontalPodAutoscalersV1Resource.GroupVersion() }

func (hpaV1View) newObject() api.Object { return api.HorizontalPodAutoscalersV1Resource.New() }

func (hpaV1View) resource() api.Resource { return api.HorizontalPodAutoscalersV1Resource }

func (hpaV1View) show(obj api.Object) api.Object {
	h, ok := obj.(*api.HorizontalPodAutoscaler)
	if !ok {
		return obj
	}
	v1, err := conversion.HPAToV1(h)
	if err != nil {
		// A stored HPA was validated in v2, which converts; this is a bug.
		log.WithError(err).Error("hpa not shown in autoscaling/v1")
		return obj
	}
	return v1
}

func (hpaV1View) take(obj api.Object) (api.Object, error) {
	h, ok := obj.(*api.HorizontalPodAutoscalerV1)
	if !ok {
		return obj, nil
	}
	return conversion.HPAFromV1(h)
}

// viewOf is the view the routes of res serve objects of stored in
// another form.
func viewOf(res api.Resource) objectView {
	switch {
	case res.Served().Group != res.Group:
		return funcGroupView{res: res}
	case res.Name == api.HorizontalPodAutoscalersResource.Name && res.Version == api.HorizontalPodAutoscalersV1Resource.Version:
		return hpaV1View{}
	}
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
func (h *handlers) take(obj api.Object) (api.Object, error) {
	if h.view == nil {
		return obj, nil
	}
	return h.view.take(obj)
}

// resource is the kind of h's routes in their version.
func (h *handlers) resource() api.Resource {
	if h.view == nil {
		return h.reg.Resource
	}
	return h.view.resource()
}

// newObject is an empty object of the form h's routes read.
func (h *handlers) newObject() api.Object {
	if h.view == nil {
		return h.reg.Resource.New()
	}
	return h.view.newObject()
}

// readObject reads the body of a write of h's kind, in its stored form.
func (h *handlers) readObject(c *gin.Context) (api.Object, error) {
	obj := h.newObject()
	if err := h.decodeBody(c, obj); err != nil {
		return nil, err
	}
	return h.take(obj)
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
