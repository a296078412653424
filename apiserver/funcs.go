package apiserver

import (
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"minik8s/apiserver/funcapi"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
	"minik8s/pkg/rbac"
	"minik8s/pkg/tracing"
)

// funcHandlers serves the function API of the reference design under
// /api/funcs. Paths are matched by hand because "template" shares its
// position with function names and instance ids.
type funcHandlers struct {
	handlers
	calls *funcapi.Calls
}

// funcNamespace is the namespace a function API request acts in, as
// parsed (parseFuncRequest, resolveTemplate) and authorized.
func funcNamespace(c *gin.Context) string {
	if fr := requestOf(c).fn; fr != nil {
		return fr.namespace
	}
	return api.DefaultNamespace
}

// dispatch serves a request of the function API as parseFuncRequest read
// it: the route and names authorization judged.
func (h *funcHandlers) dispatch(c *gin.Context) {
	fr := requestOf(c).fn
	if fr == nil {
		fail(c, notFoundPath(c.Request.URL.Path))
		return
	}
	switch fr.op {
	case funcListAll:
		h.listFuncs(c)
	case funcListTemplates:
		h.withName(c, "", h.list)
	case funcWatchTemplates:
		h.watchTemplates(c)
	case funcCreateTemplate:
		h.createTemplate(c)
	case funcGetTemplate:
		h.withName(c, fr.name, h.get)
	case funcUpdateTemplate:
		h.updateTemplate(c)
	case funcDeleteTemplate:
		h.withName(c, fr.name, h.delete)
	case funcCall:
		h.call(c, fr.name)
	case funcInstance:
		h.instance(c, fr.id)
	case funcStep:
		h.runStep(c, fr.name, fr.id)
	default:
		fail(c, notFoundPath(c.Request.URL.Path))
	}
}

// maxWait bounds ?wait=.
const maxWait = 10 * time.Minute

// call serves POST /api/funcs/:name: the body, whatever its content type,
// is the argument. Without ?wait= the instance is stored before the 202;
// with it the call is handed to a runner and answered when it ends.
func (h *funcHandlers) call(c *gin.Context, name string) {
	wait := requestOf(c).fn.wait
	body, err := readBody(c, h.maxBody)
	if err != nil {
		fail(c, err)
		return
	}
	if _, _, ok := function.SplitTarget(name); !ok {
		fail(c, errdefs.BadRequest("", "%q: a call names a revision by its number, NAME@N with N from 1", name))
		return
	}
	ctx, ns := c.Request.Context(), funcNamespace(c)
	req, err := callRequest(c.Request, ns, name, body)
	if err != nil {
		fail(c, err)
		return
	}
	req.Wait = wait
	span := callSpan(c.Request, &req)
	callback := c.GetHeader(callbackHeader)
	var inst *api.FuncInstance
	if wait > 0 && callback == "" {
		inst, err = h.calls.RunSync(ctx, req, span)
	} else {
		inst, err = h.calls.Start(ctx, req, callback, span)
		if err == nil && wait > 0 {
			inst, err = h.calls.WaitEnded(ctx, inst, wait)
		}
	}
	if err != nil {
		fail(c, err)
		return
	}
	h.answer(c, inst)
}

// callRequest reads the call a request makes: a CloudEvent (binary or
// structured mode) whose data is the argument, or a plain body made into
// an event of the function API.
func callRequest(r *http.Request, ns, fn string, body []byte) (function.CallRequest, error) {
	id := uuid.NewString()
	ev, arg, err := function.ReadEvent(r.Header, body, api.FuncEvent{ID: id, Source: "/api/funcs/" + fn,
		Type: function.EventTypeCall, Subject: fn, Time: time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return function.CallRequest{}, err
	}
	function.RecordRequest(ev, r)
	return function.CallRequest{Namespace: ns, Function: fn, ID: id, Arg: arg, Event: ev, Traceparent: tracing.Valid(r.Header.Get(tracing.Header)),
		AcceptEvent: function.AcceptsEvent(r)}, nil
}

// callbackHeader names where an asynchronous call's result is POSTed, as
// OpenFaaS has it.
const callbackHeader = "X-Callback-Url"

// answer replies with the finished instance, or 202 with its id while it runs.
func (h *funcHandlers) answer(c *gin.Context, inst *api.FuncInstance) {
	if call.Terminal(inst) && c.GetHeader(function.HeaderLog) != "" {
		c.Header(function.HeaderLog, function.LogHeader(inst.Status.Steps))
	}
	if call.Terminal(inst) && function.AcceptsEvent(c.Request) {
		b, err := function.OutcomeEvent(inst, "/api/funcs/"+inst.Spec.Function)
		if err != nil {
			fail(c, err)
			return
		}
		c.Data(http.StatusOK, function.ContentTypeCloudEvent, b)
		return
	}
	if inst.Status.Phase == api.InstanceSucceeded && inst.Status.ResultType == function.ResultHTTP && !acceptsJSON(c.Request) {
		// The answer the function described, to a caller that did not ask
		// for the instance (pkg/client and mkctl ask for JSON).
		c.Header(function.HeaderInstanceID, inst.Name)
		function.WriteResult(c.Writer, string(inst.Status.Result), inst.Status.ResultType, true)
		return
	}
	if call.Terminal(inst) {
		c.JSON(http.StatusOK, funcapi.View(inst))
		return
	}
	c.JSON(http.StatusAccepted, gin.H{"instanceId": inst.Name, "status": inst.Status.Phase})
}

// instance serves GET /api/funcs/:id.
func (h *funcHandlers) instance(c *gin.Context, id string) {
	ctx := c.Request.Context()
	inst, err := h.calls.Get(ctx, funcNamespace(c), id)
	if err == nil {
		err = checkOwner(ctx, inst)
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, funcapi.View(inst))
}

// runStep serves PUT /api/funcs/:name/:id, the reference design's internal
// step call: run name with the body as argument as the next step of
// instance id and go on from there; RETURN stores the body as the result.
// The instance's runner follows the new cursor: a step it was running
// meanwhile is not recorded (its write finds the instance changed).
func (h *funcHandlers) runStep(c *gin.Context, name, id string) {
	wait := requestOf(c).fn.wait
	arg, err := readBody(c, h.maxBody)
	if err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	var owns func(*api.FuncInstance) error
	if ownerFilter(ctx) != "" {
		owns = func(inst *api.FuncInstance) error { return checkOwner(ctx, inst) }
	}
	inst, err := h.calls.Step(ctx, funcNamespace(c), id, name, arg, owns)
	if err != nil {
		fail(c, err)
		return
	}
	if wait > 0 {
		if inst, err = h.calls.WaitEnded(ctx, inst, wait); err != nil {
			fail(c, err)
			return
		}
	}
	h.answer(c, inst)
}

// withName runs a generic handler with the name and namespace params set
// from the parsed request.
func (h *funcHandlers) withName(c *gin.Context, name string, fn gin.HandlerFunc) {
	c.Params = append(c.Params, gin.Param{Key: "name", Value: name}, gin.Param{Key: "ns", Value: funcNamespace(c)})
	fn(c)
}

// createTemplate stores the template resolveTemplate read, in the
// namespace authorized.
func (h *funcHandlers) createTemplate(c *gin.Context) {
	reg, err := h.registryFor(c)
	var out api.Object
	if err == nil {
		out, err = reg.Create(c.Request.Context(), funcNamespace(c), requestOf(c).fn.template)
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, out)
}

// updateTemplate replaces a template with the one resolveTemplate read.
func (h *funcHandlers) updateTemplate(c *gin.Context) {
	fr := requestOf(c).fn
	h.withName(c, fr.name, func(c *gin.Context) { h.updateObject(c, fr.template) })
}

// watchTemplates serves /api/watch/funcs/template[/NAME] and ?watch=true:
// a watch of the template the path names, if any.
func (h *funcHandlers) watchTemplates(c *gin.Context) {
	fr := requestOf(c).fn
	f, err := registry.FilterOf(fr.query.list)
	if err != nil {
		fail(c, err)
		return
	}
	if fr.name != "" {
		f.Fields = append(f.Fields, registry.FieldRequirement{Path: []string{"metadata", "name"}, Value: fr.name})
	}
	h.watch(c, fr.namespace, f)
}

// callSpan is the apiserver's span of a call, from the request to the
// answer: under the caller's span when it sent a traceparent, else the
// root of a new trace. The call goes on under it (req.Traceparent).
func callSpan(r *http.Request, req *function.CallRequest) *api.FuncSpan {
	traceID, parent, ok := tracing.Parse(req.Traceparent)
	if !ok {
		traceID, parent = tracing.NewTraceID(), ""
	}
	span := &api.FuncSpan{Name: r.Method + " /api/funcs/" + req.Function, Service: "apiserver", TraceID: traceID,
		SpanID: tracing.NewSpanID(), ParentSpanID: parent, StartNs: time.Now().UnixNano()}
	req.Traceparent = tracing.Format(traceID, span.SpanID)
	return span
}

// resolveInstance finds the namespace of an instance read by id alone
// (GET /api/funcs/ID without ?namespace=): ids are UUIDs, unique in the
// cluster, so it is the namespace that holds it, looked for only where
// the caller may read instances (default first). An id found nowhere the
// caller may read is answered as an unknown one, whatever it may not see.
func (s *Server) resolveInstance(c *gin.Context, req *request) error {
	fr := req.fn
	if fr.op != funcInstance || fr.nsQuery != "" {
		return nil
	}
	ctx := c.Request.Context()
	mayRead := func(ns string) bool {
		a := req.attrs
		a.User, a.Namespace = rbac.UserOf(ctx), ns
		return s.authz.Allows(a) || s.allowsOwn(a)
	}
	found := func(ns string) bool {
		_, err := s.calls.Get(ctx, ns, fr.id)
		return err == nil
	}
	if mayRead(api.DefaultNamespace) && found(api.DefaultNamespace) {
		return nil
	}
	// The namespaces as the server follows them, from memory: a lookup
	// costs the store nothing but the reads where the caller may look.
	for _, ns := range s.namespaces.Names() {
		if ns != api.DefaultNamespace && mayRead(ns) && found(ns) {
			fr.namespace, req.attrs.Namespace = ns, ns
			return nil
		}
	}
	// Found nowhere the caller may look: the request stays in default, as
	// before, and is authorized and answered there (404 for a caller who
	// may read default), whatever holds the id where it may not look.
	return nil
}

// acceptsJSON says whether the request asks for JSON by name (Accept:
// application/json), as clients of the function API do; */* does not.
func acceptsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "application/json" {
			return true
		}
	}
	return false
}
