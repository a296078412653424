package apiserver

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/api"
)

// funcHandlers serves the function API of the reference design under
// /api/funcs. Paths are matched by hand because "template" shares its
// position with function names and instance ids.
type funcHandlers struct {
	handlers
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
	fail(c, notFoundPath(c.Request.URL.Path))
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
