package apiserver

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/api/validate/content"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/rbac"
)

// The reference design's function API shares one position among
// "template", function names and instance ids, so its paths are parsed
// here, once: authorization judges the funcRequest that dispatch then
// serves. A path this parser does not know (an empty segment, "." or "..",
// more segments than a route has) is 404.

// funcOp is what a request of the function API does.
type funcOp int

const (
	funcListAll        funcOp = iota + 1 // GET /api/funcs: functions with triggers and counters
	funcListTemplates                    // GET /api/funcs/template
	funcWatchTemplates                   // ...template?watch=true, /api/watch/funcs/template[/NAME]
	funcCreateTemplate                   // POST /api/funcs/template
	funcGetTemplate                      // GET /api/funcs/template/NAME
	funcUpdateTemplate                   // PUT /api/funcs/template/NAME
	funcDeleteTemplate                   // DELETE /api/funcs/template/NAME
	funcCall                             // POST /api/funcs/NAME
	funcInstance                         // GET /api/funcs/ID
	funcStep                             // PUT /api/funcs/NAME/ID
)

// funcRequest is a request of the function API as parsed.
type funcRequest struct {
	op funcOp
	// name is the template, or the function called or stepped to; id the
	// instance.
	name, id string
	// namespace is where the request acts: ?namespace=, else the body's
	// (a template's create or update, resolveTemplate), else default.
	namespace string
	// nsQuery is ?namespace= as sent ("" when absent).
	nsQuery string
	// wait is ?wait= of a call or a step.
	wait  time.Duration
	query queryOptions
	// template is the body of a template's create or update, read once
	// (resolveTemplate) so that its namespace is the one authorized.
	template *api.Func
}

// parseFuncRequest parses a request of the function API: full is the
// route gin matched, path its *path, name its :name. fr is nil for a path
// the parser does not know; err is bad input in the query.
func parseFuncRequest(method, full, path, name string, q url.Values) (fr *funcRequest, err error) {
	fr = &funcRequest{}
	fr.nsQuery, err = namespaceParam(q)
	fr.namespace = fr.nsQuery
	if fr.namespace == "" {
		fr.namespace = api.DefaultNamespace
	}
	var segs []string
	switch full {
	case "/api/funcs":
		fr.op = funcListAll
	case "/api/watch/funcs/template":
		fr.op = funcWatchTemplates
	case "/api/watch/funcs/template/:name":
		fr.op, fr.name = funcWatchTemplates, name
		if !pathSegment(name) {
			return nil, nil
		}
	default:
		var ok bool
		if segs, ok = funcSegments(path); !ok {
			return nil, nil
		}
		if fr.op = funcOpOf(method, segs, q); fr.op == 0 {
			return nil, nil
		}
	}
	switch fr.op {
	case funcGetTemplate, funcUpdateTemplate, funcDeleteTemplate:
		fr.name = segs[1]
	case funcWatchTemplates:
		if len(segs) == 2 {
			fr.name = segs[1]
		}
	case funcCall:
		fr.name = segs[0]
	case funcInstance:
		fr.id = segs[0]
	case funcStep:
		fr.name, fr.id = segs[0], segs[1]
	}
	qerr := fr.decodeQuery(q)
	if err == nil {
		err = qerr
	}
	if all := q.Get("allNamespaces"); all != "" && err == nil {
		switch {
		case fr.op != funcListAll:
			err = errdefs.BadRequest("allNamespaces", "only GET /api/funcs lists every namespace")
		case all != "true" && all != "false":
			err = errdefs.BadRequest("allNamespaces", "%q is not true or false", all)
		case all == "true" && fr.nsQuery != "":
			err = errdefs.BadRequest("allNamespaces", "cannot be combined with ?namespace=")
		case all == "true":
			fr.namespace = "" // authorized as a list over the cluster
		}
	}
	return fr, err
}

// funcSegments splits the path after /api/funcs: "/" is none; one trailing
// slash is allowed (the reference scripts post to .../template/).
func funcSegments(path string) ([]string, bool) {
	if path == "/" {
		return nil, true
	}
	p := strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/")
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if !pathSegment(s) {
			return nil, false
		}
	}
	return segs, true
}

// pathSegment: a segment that can name something.
func pathSegment(s string) bool { return s != "" && len(content.IsPathSegmentName(s)) == 0 }

// funcOpOf is what method does on the path segments; 0 when nothing.
func funcOpOf(method string, segs []string, q url.Values) funcOp {
	switch {
	case len(segs) == 0 && method == http.MethodGet:
		return funcListAll
	case len(segs) == 1 && segs[0] == api.FuncTemplate:
		switch method {
		case http.MethodGet:
			if rawWatch(q) {
				return funcWatchTemplates
			}
			return funcListTemplates
		case http.MethodPost:
			return funcCreateTemplate
		}
	case len(segs) == 2 && segs[0] == api.FuncTemplate:
		switch method {
		case http.MethodGet:
			if rawWatch(q) {
				return funcWatchTemplates
			}
			return funcGetTemplate
		case http.MethodPut:
			return funcUpdateTemplate
		case http.MethodDelete:
			return funcDeleteTemplate
		}
	case len(segs) == 1 && method == http.MethodPost:
		return funcCall
	case len(segs) == 1 && method == http.MethodGet:
		return funcInstance
	case len(segs) == 2 && method == http.MethodPut:
		return funcStep
	}
	return 0
}

// namespaceParam reads ?namespace=: once, and a namespace's name.
func namespaceParam(q url.Values) (string, error) {
	vals := q["namespace"]
	if len(vals) == 0 {
		return "", nil
	}
	if len(vals) > 1 {
		return "", errdefs.BadRequest("namespace", "given %d times: a request acts in one namespace", len(vals))
	}
	if err := checkNamespaceName(vals[0]); err != nil {
		return "", errdefs.BadRequest("namespace", "%v", err)
	}
	return vals[0], nil
}

func checkNamespaceName(ns string) error {
	if msgs := k8svalidation.IsDNS1123Label(ns); len(msgs) > 0 {
		return errdefs.BadRequest("", "%q is not a namespace's name: %s", ns, strings.Join(msgs, "; "))
	}
	return nil
}

// decodeQuery decodes the options of the request's query: those of the
// Kubernetes request it stands for, and ?wait= of a call or a step.
func (fr *funcRequest) decodeQuery(q url.Values) error {
	kind := queryNone
	switch fr.op {
	case funcListTemplates, funcWatchTemplates:
		kind = queryList
	case funcGetTemplate:
		kind = queryGet
	case funcCreateTemplate:
		kind = queryCreate
	case funcUpdateTemplate:
		kind = queryUpdate
	case funcDeleteTemplate:
		kind = queryDelete
	case funcCall, funcStep:
		var err error
		fr.wait, err = waitParam(q.Get("wait"))
		return err
	}
	var err error
	fr.query, err = decodeQuery(kind, q)
	if fr.op == funcWatchTemplates {
		fr.query.list.Watch = true
	}
	return err
}

// attributes are what authorization judges: templates are funcs, a call
// is create on funcs/invoke, an instance read or stepped is get or update
// on funcinstances.
func (fr *funcRequest) attributes(path string) rbac.Attributes {
	a := rbac.Attributes{Path: path, ResourceRequest: true, APIGroup: api.FuncsResource.Group,
		Namespace: fr.namespace, Resource: api.FuncsResource.Name, Name: fr.name}
	switch fr.op {
	case funcListAll, funcListTemplates:
		a.Verb = "list"
	case funcWatchTemplates:
		a.Verb = "watch"
	case funcCreateTemplate:
		a.Verb = "create"
	case funcGetTemplate:
		a.Verb = "get"
	case funcUpdateTemplate:
		a.Verb = "update"
	case funcDeleteTemplate:
		a.Verb = "delete"
	case funcCall:
		// Calling a revision (NAME@N) is calling the function.
		a.Verb, a.Subresource, a.Name = "create", funcInvoke, function.BaseName(fr.name)
	case funcInstance:
		a.Verb, a.Resource, a.Name = "get", api.FuncInstancesResource.Name, fr.id
	case funcStep:
		a.Verb, a.Resource, a.Name = "update", api.FuncInstancesResource.Name, fr.id
	}
	return a
}

// resolveTemplate reads the body of a template's create or update, before
// authorization: the namespace it names is the one the request acts in,
// and so the one authorized. A namespace in the query and another in the
// body are refused, as Kubernetes refuses a body's namespace that is not
// the path's.
func (h *funcHandlers) resolveTemplate(c *gin.Context, req *request) error {
	fr := req.fn
	if fr.op != funcCreateTemplate && fr.op != funcUpdateTemplate {
		return nil
	}
	f := &api.Func{}
	if err := h.decodeBody(c, f); err != nil {
		return err
	}
	switch body := f.Namespace; {
	case fr.nsQuery != "" && body != "" && body != fr.nsQuery:
		return errdefs.BadRequest("metadata.namespace", "the namespace of the provided object does not match the namespace sent on the request")
	case fr.nsQuery == "" && body != "":
		if err := checkNamespaceName(body); err != nil {
			return errdefs.BadRequest("metadata.namespace", "%v", err)
		}
		fr.namespace = body
	}
	f.Namespace = fr.namespace
	fr.template = f
	req.attrs.Namespace = fr.namespace
	return nil
}

// waitParam reads ?wait=30s (or a number of seconds); 0 means do not wait.
func waitParam(w string) (time.Duration, error) {
	if w == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(w)
	if err != nil {
		n, nerr := strconv.Atoi(w)
		if nerr != nil || n < 0 || n > int(maxWait/time.Second) {
			return 0, errdefs.BadRequest("wait", "%q is not a duration such as 30s", w)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > maxWait {
		return 0, errdefs.BadRequest("wait", "%s is not between 0 and %s", d, maxWait)
	}
	return d, nil
}

// Subresources of the function kinds that only the function API has.
const (
	// funcInvoke: calling a function (POST /api/funcs/NAME).
	funcInvoke = "invoke"
	// instanceOwn: the instances the requester started; function-invoker
	// has get/update on funcinstances/own, and the handlers show it only
	// its own.
	instanceOwn = "own"
)
