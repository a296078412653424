package apiserver

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/api/validate/content"

	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// Every route says, where it is registered, what it does: the resource,
// subresource and verb authorization judges and the options its query
// carries. A request is read once, from the route the router matched and
// the parameters it took (gin matches before any middleware runs), and
// authorization, audit, error answers and the handler all use that one
// reading: no second parser can see another path than the router did.

// routeInfo describes a route.
type routeInfo struct {
	// resource is set for a resource route: its group, resource and
	// subresource.
	resource    bool
	group       string
	res         string
	subresource string
	// namespaced: the route's :ns is the namespace; nameParam is the
	// parameter naming the object ("" on a collection).
	namespaced bool
	nameParam  string
	// verb fixes the verb (exec is a create whatever the method); else it
	// comes from the method, as Kubernetes reads it.
	verb string
	// funcs: a route of the reference design's function API, parsed by
	// parseFuncRequest.
	funcs bool
	// custom: a custom resource's route, its group and resource the
	// path's (:group, :res).
	custom bool
}

// router registers routes with what they do.
type router struct {
	*gin.Engine
	infos map[string]*routeInfo // by method and path
}

func newRouter(e *gin.Engine) *router {
	return &router{Engine: e, infos: map[string]*routeInfo{}}
}

// handle registers a route and what it does.
func (r *router) handle(method, path string, info routeInfo, h ...gin.HandlerFunc) {
	key := method + " " + path
	if _, dup := r.infos[key]; dup {
		panic("apiserver: route registered twice: " + key)
	}
	r.infos[key] = &info
	r.Handle(method, path, h...)
}

// nonResource is the description of a route that serves no resource
// (health, discovery, the dashboard's files...).
func nonResource() routeInfo { return routeInfo{} }

// checkRoutes makes sure every route gin serves has a description: a
// route without one would be refused (404) at every request.
func (r *router) checkRoutes() {
	for _, rt := range r.Routes() {
		if _, ok := r.infos[rt.Method+" "+rt.Path]; !ok {
			panic("apiserver: route without a description: " + rt.Method + " " + rt.Path)
		}
	}
}

// request is a request as read once.
type request struct {
	info *routeInfo
	// attrs are what authorization judges.
	attrs rbac.Attributes
	// query holds the options decoded from the query.
	query queryOptions
	// fn is a request of the function API.
	fn *funcRequest
	// notFound: a path the parser does not know (404 once authenticated).
	notFound error
	// err: bad input found reading the request, answered once the
	// request is authorized.
	err error
	// timeout is ?timeout= of a request that is not long-running (0: none).
	timeout time.Duration
}

// watching says whether the request is a watch.
func (req *request) watching() bool {
	if req.fn != nil {
		return req.fn.op == funcWatchTemplates
	}
	return req.attrs.ResourceRequest && req.attrs.Verb == "watch"
}

// longRunning: watches, followed logs and upgraded connections (exec,
// port-forward) last as long as their client wants.
func (req *request) longRunning(r *http.Request) bool {
	switch {
	case req.watching(), r.Header.Get("Upgrade") != "":
		return true
	case req.query.log != nil:
		return req.query.log.Follow
	case req.query.exec != nil, req.query.portForward != nil:
		return true
	}
	return false
}

// requestKey holds a request's *request in its gin context.
const requestKey = "minik8s.request"

// requestOf is the request as read by readRequest.
func requestOf(c *gin.Context) *request {
	if r, ok := c.Value(requestKey).(*request); ok {
		return r
	}
	// Only a handler called outside the engine (tests) gets here.
	return &request{info: &routeInfo{}, attrs: rbac.Attributes{Path: c.Request.URL.Path, Verb: nonResourceVerb(c.Request.Method)}}
}

// requestInfo reads each request once, first of all, as Kubernetes'
// WithRequestInfo filter does.
func (s *Server) requestInfo(infos map[string]*routeInfo) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Set(requestKey, readRequest(c, infos))
		c.Next()
	}
}

// readRequest reads what a request does from the route gin matched.
func readRequest(c *gin.Context, infos map[string]*routeInfo) *request {
	r := c.Request
	req := &request{attrs: rbac.Attributes{Path: r.URL.Path, Verb: nonResourceVerb(r.Method)}}
	full := c.FullPath()
	if full == "" {
		// No route: the router's 404 or 405 answers, and nothing else runs.
		req.info = &routeInfo{}
		return req
	}
	info, ok := infos[r.Method+" "+full]
	if !ok {
		req.info = &routeInfo{}
		req.notFound = notFoundPath(r.URL.Path)
		return req
	}
	req.info = info
	q := r.URL.Query()
	switch {
	case info.funcs:
		req.fn, req.err = parseFuncRequest(r.Method, full, c.Param("path"), c.Param("name"), q)
		if req.fn == nil {
			req.notFound = notFoundPath(r.URL.Path)
			break
		}
		req.attrs = req.fn.attributes(r.URL.Path)
		req.query = req.fn.query
	case info.resource:
		req.readResource(c, q)
	}
	if !req.longRunning(r) {
		var err error
		if req.timeout, err = timeoutParam(q); req.err == nil {
			req.err = err
		}
	}
	return req
}

// readResource reads a request of a resource route: where it is, its
// verb, and the options of its query.
func (req *request) readResource(c *gin.Context, q map[string][]string) {
	info := req.info
	a := &req.attrs
	a.ResourceRequest = true
	a.APIGroup, a.Resource, a.Subresource = info.group, info.res, info.subresource
	if info.custom {
		a.APIGroup, a.Resource = c.Param("group"), c.Param("res")
	}
	if info.namespaced {
		a.Namespace = c.Param("ns")
		if err := checkPathSegment("Namespace", a.Namespace); err != nil {
			req.notFoundOrBad(err, a.Namespace)
		}
	}
	if info.nameParam != "" {
		a.Name = c.Param(info.nameParam)
		if err := checkPathSegment("Name", a.Name); err != nil {
			req.notFoundOrBad(err, a.Name)
		}
		if info.nameParam == "ns" {
			// A namespace is in itself, as Kubernetes has it.
			a.Namespace = a.Name
		}
	}
	a.Verb = resourceVerb(c.Request.Method, a.Name != "")
	if info.verb != "" {
		a.Verb = info.verb
	}
	var err error
	req.query, err = decodeQuery(req.queryKind(), q)
	if req.err == nil {
		req.err = err
	}
	if a.Verb == "list" && req.query.list != nil {
		if req.query.list.Watch || (err != nil && rawWatch(q)) {
			a.Verb = "watch"
		}
		// A list of one name is authorized as that name, as Kubernetes does.
		if fs := req.query.list.FieldSelector; fs != nil && a.Name == "" {
			if name, ok := fs.RequiresExactMatch("metadata.name"); ok && len(content.IsPathSegmentName(name)) == 0 {
				a.Name = name
			}
		}
	}
}

// notFoundOrBad: an empty segment is no path the parser knows; a name
// that cannot be a name is refused as Kubernetes' storage refuses it.
func (req *request) notFoundOrBad(err error, segment string) {
	if segment == "" {
		req.notFound = notFoundPath(req.attrs.Path)
		return
	}
	if req.err == nil {
		req.err = err
	}
}

// checkPathSegment refuses a namespace or name that cannot be one in a
// path ("." and "..", or one holding "/" or "%"), as Kubernetes' key
// functions do: 400 "Name parameter invalid".
func checkPathSegment(what, s string) error {
	if s == "" {
		return errdefs.BadRequest("", "%s parameter required.", what)
	}
	if msgs := content.IsPathSegmentName(s); len(msgs) > 0 {
		return errdefs.BadRequest("", "%s parameter invalid: %q: %s", what, s, strings.Join(msgs, ";"))
	}
	return nil
}

// rawWatch says whether the watch parameter asks for a watch, as
// Kubernetes reads it when the other parameters do not decode.
func rawWatch(q map[string][]string) bool {
	v, ok := q["watch"]
	if !ok || len(v) == 0 {
		return false
	}
	switch strings.ToLower(v[0]) {
	case "false", "0":
		return false
	}
	return true
}

// queryKind is which options a resource request's query carries.
func (req *request) queryKind() queryKind {
	a := req.attrs
	switch a.Subresource {
	case "log":
		return queryPodLog
	case "exec":
		return queryPodExec
	case "portforward":
		return queryPodPortForward
	}
	switch a.Verb {
	case "list", "watch":
		return queryList
	case "get":
		return queryGet
	case "create":
		return queryCreate
	case "update":
		return queryUpdate
	case "patch":
		return queryPatch
	case "delete", "deletecollection":
		return queryDelete
	}
	return queryNone
}

func nonResourceVerb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(method)
}

// resourceVerb is the verb of a resource request by its method; a GET of
// a collection is a list until its query says watch.
func resourceVerb(method string, named bool) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		if named {
			return "get"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return strings.ToLower(method)
}

// requestAttributes are the attributes of the request c carries, as
// authorization judged (or would judge) them.
func requestAttributes(c *gin.Context) rbac.Attributes { return requestOf(c).attrs }
