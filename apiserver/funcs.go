package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// funcHandlers serves the function API of the reference design under
// /api/funcs. Paths are matched by hand because "template" shares its
// position with function names and instance ids.
type funcHandlers struct {
	handlers
	calls *caller
}

// namespace of a template request: ?namespace=, else "default".
func funcNamespace(c *gin.Context) string {
	if ns := c.Query("namespace"); ns != "" {
		return ns
	}
	return api.DefaultNamespace
}

func (h *funcHandlers) dispatch(c *gin.Context) {
	parts := strings.Split(strings.Trim(c.Param("path"), "/"), "/")
	method := c.Request.Method
	if parts[0] == api.FuncTemplate {
		switch {
		case len(parts) == 1 && method == http.MethodGet:
			h.listTemplates(c)
			return
		case len(parts) == 1 && method == http.MethodPost:
			h.createTemplate(c)
			return
		case len(parts) == 2 && method == http.MethodGet:
			if isWatch(c) {
				h.watchTemplates(c)
				return
			}
			h.withName(c, parts[1], h.get)
			return
		case len(parts) == 2 && method == http.MethodPut:
			h.withName(c, parts[1], h.update)
			return
		case len(parts) == 2 && method == http.MethodDelete:
			h.withName(c, parts[1], h.delete)
			return
		}
	}
	switch {
	case len(parts) == 1 && parts[0] != "" && method == http.MethodPost:
		h.call(c, parts[0])
		return
	case len(parts) == 1 && parts[0] != "" && method == http.MethodGet:
		h.instance(c, parts[0])
		return
	case len(parts) == 2 && method == http.MethodPut:
		h.runStep(c, parts[0], parts[1])
		return
	}
	fail(c, notFoundPath(c.Request.URL.Path))
}

// maxWait bounds ?wait=.
const maxWait = 10 * time.Minute

// waitParam reads ?wait=30s (or a number of seconds); 0 means do not wait.
func waitParam(c *gin.Context) (time.Duration, error) {
	w := c.Query("wait")
	if w == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(w)
	if err != nil {
		n, nerr := strconv.Atoi(w)
		if nerr != nil {
			return 0, errdefs.BadRequest("wait", "%q is not a duration such as 30s", w)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > maxWait {
		return 0, errdefs.BadRequest("wait", "%s is not between 0 and %s", d, maxWait)
	}
	return d, nil
}

// call serves POST /api/funcs/:name: the body, whatever its content type,
// is the argument. The instance is in etcd before the answer.
func (h *funcHandlers) call(c *gin.Context, name string) {
	wait, err := waitParam(c)
	if err != nil {
		fail(c, err)
		return
	}
	arg, err := readBody(c, h.maxBody)
	if err != nil {
		fail(c, err)
		return
	}
	inst, w, err := h.calls.start(c.Request.Context(), funcNamespace(c), name, arg, wait > 0)
	if err != nil {
		fail(c, err)
		return
	}
	h.answer(c, inst, wait, w)
}

// answer replies 202 with the instance id, or with the finished instance
// when the caller asked to wait (w is set) and it ended in time.
func (h *funcHandlers) answer(c *gin.Context, inst *api.FuncInstance, wait time.Duration, w *waiter) {
	if w != nil {
		ctx, cancel := context.WithTimeout(c.Request.Context(), wait)
		defer cancel()
		done, err := w.wait(ctx)
		if err != nil {
			fail(c, err)
			return
		}
		if terminal(done) {
			c.JSON(http.StatusOK, view(done))
			return
		}
	}
	c.JSON(http.StatusAccepted, gin.H{"instanceId": inst.Name, "status": inst.Status.Phase})
}

// instance serves GET /api/funcs/:id.
func (h *funcHandlers) instance(c *gin.Context, id string) {
	obj, err := h.calls.instances.get(c.Request.Context(), funcNamespace(c), id)
	if err != nil {
		if errdefs.IsNotFound(err) {
			err = fmt.Errorf("function instance %q not found (unknown, or expired): %w", id, errdefs.ErrNotFound)
		}
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, view(obj.(*api.FuncInstance)))
}

// runStep serves PUT /api/funcs/:name/:id, the reference design's internal
// step call: run name with the body as argument as the next step of
// instance id and go on from there; RETURN stores the body as the result.
func (h *funcHandlers) runStep(c *gin.Context, name, id string) {
	wait, err := waitParam(c)
	if err != nil {
		fail(c, err)
		return
	}
	arg, err := readBody(c, h.maxBody)
	if err != nil {
		fail(c, err)
		return
	}
	ctx, ns := c.Request.Context(), funcNamespace(c)
	if name != api.FuncReturn {
		if _, err := h.reg.get(ctx, ns, name); err != nil {
			fail(c, err)
			return
		}
	}
	if h.calls.isRunning(ns, id) {
		fail(c, fmt.Errorf("function instance %q is running a step now: %w", id, errdefs.ErrConflict))
		return
	}
	obj, err := h.calls.instances.mutate(ctx, ns, id, func(o api.Object) (api.Object, error) {
		inst := o.(*api.FuncInstance)
		if terminal(inst) {
			// A result, once stored, is the answer: no step rewrites it.
			return nil, fmt.Errorf("function instance %q has ended (%s): a finished instance cannot be changed: %w",
				id, inst.Status.Phase, errdefs.ErrConflict)
		}
		inst.Status.Phase = api.InstanceRunning
		inst.Status.Error = ""
		inst.Status.Result = ""
		inst.Status.CompletionTime = nil
		inst.Status.Next = &api.FuncStep{Function: name, Arg: string(arg)}
		return inst, nil
	})
	if err != nil {
		if errdefs.IsNotFound(err) {
			err = fmt.Errorf("function instance %q not found: %w", id, errdefs.ErrNotFound)
		}
		fail(c, err)
		return
	}
	inst := obj.(*api.FuncInstance)
	var w *waiter
	if wait > 0 {
		w = h.calls.subscribe(ns, id)
	}
	h.calls.launch(ns, id, inst)
	h.answer(c, inst, wait, w)
}

// withName runs a generic handler with the name and namespace params set.
func (h *funcHandlers) withName(c *gin.Context, name string, fn gin.HandlerFunc) {
	c.Params = append(c.Params, gin.Param{Key: "name", Value: name}, gin.Param{Key: "ns", Value: funcNamespace(c)})
	fn(c)
}

func (h *funcHandlers) listTemplates(c *gin.Context) {
	c.Params = append(c.Params, gin.Param{Key: "ns", Value: funcNamespace(c)})
	h.list(c)
}

func (h *funcHandlers) createTemplate(c *gin.Context) {
	f := &api.Func{}
	if err := h.decodeBody(c, f); err != nil {
		fail(c, err)
		return
	}
	ns := f.Namespace
	if ns == "" {
		ns = funcNamespace(c)
	}
	out, err := h.reg.create(c.Request.Context(), ns, f)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, out)
}

// watchTemplates serves /api/watch/funcs/template[/:name] and ?watch=true.
func (h *funcHandlers) watchTemplates(c *gin.Context) {
	name := c.Param("name")
	if name == "" {
		parts := strings.Split(strings.Trim(c.Param("path"), "/"), "/")
		if len(parts) == 2 {
			name = parts[1]
		}
	}
	selector := c.Query("fieldSelector")
	if name != "" {
		if selector != "" {
			selector += ","
		}
		selector += "metadata.name=" + name
	}
	f, err := parseFilter(c.Query("labelSelector"), selector)
	if err != nil {
		fail(c, err)
		return
	}
	h.watch(c, funcNamespace(c), f)
}
