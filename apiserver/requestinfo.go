package apiserver

import (
	"net/http"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/rbac"
)

// requestAttributes reads what a request does, as Kubernetes' request info
// does, for authorization: the verb, and for a resource path its API
// group, resource, subresource, namespace and name. The function API's
// routes map onto the function kinds (see funcAttributes).
func requestAttributes(r *http.Request) rbac.Attributes {
	path := strings.TrimSuffix(r.URL.Path, "/")
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if isReferenceRoute(r.URL.Path) {
		return funcAttributes(r, parts)
	}
	a := rbac.Attributes{Path: r.URL.Path, Verb: nonResourceVerb(r.Method)}
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:] // /api/v1/...
	case len(parts) >= 4 && parts[0] == "apis":
		a.APIGroup = parts[1]
		rest = parts[3:] // /apis/GROUP/VERSION/...
	default:
		return a
	}
	// namespaces/NS/RESOURCE/...: a namespaced resource; namespaces/NS
	// (and namespaces/NS/status|finalize): the namespace itself.
	namespaceSub := len(rest) == 3 && rest[0] == "namespaces" && (rest[2] == "status" || rest[2] == "finalize")
	if len(rest) >= 3 && rest[0] == "namespaces" && !namespaceSub {
		a.Namespace = rest[1]
		rest = rest[2:]
	} else if len(rest) >= 2 && rest[0] == "namespaces" {
		a.Namespace = rest[1]
	}
	a.ResourceRequest = true
	a.Resource = rest[0]
	if len(rest) >= 2 {
		a.Name = rest[1]
	}
	if len(rest) >= 3 {
		a.Subresource = rest[2]
	}
	a.Verb = resourceVerb(r, a.Name != "")
	if a.Resource == "pods" && (a.Subresource == "exec" || a.Subresource == "portforward") {
		// Running a command is a create, whatever the method (kubectl's
		// websocket upgrade is a GET), as Kubernetes authorizes it.
		a.Verb = "create"
	}
	return a
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

func resourceVerb(r *http.Request, named bool) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
			return "watch"
		}
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
	return strings.ToLower(r.Method)
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

// funcAttributes maps the reference design's routes onto the function
// kinds: templates are funcs, a call is create on funcs/invoke, an
// instance read or stepped is get or update on funcinstances.
func funcAttributes(r *http.Request, parts []string) rbac.Attributes {
	a := rbac.Attributes{Path: r.URL.Path, ResourceRequest: true, APIGroup: api.FuncsResource.Group,
		Namespace: funcNamespaceOf(r)}
	if parts[1] == "watch" { // /api/watch/funcs/template[/NAME]
		a.Verb, a.Resource = "watch", api.FuncsResource.Name
		if len(parts) >= 5 {
			a.Name = parts[4]
		}
		return a
	}
	rest := parts[2:] // after /api/funcs
	switch {
	case len(rest) >= 1 && rest[0] == api.FuncTemplate:
		a.Resource = api.FuncsResource.Name
		if len(rest) >= 2 {
			a.Name = rest[1]
		}
		a.Verb = resourceVerb(r, a.Name != "")
	case len(rest) == 1 && r.Method == http.MethodPost:
		a.Verb, a.Resource, a.Subresource, a.Name = "create", api.FuncsResource.Name, funcInvoke, rest[0]
	case len(rest) == 1:
		a.Verb, a.Resource, a.Name = resourceVerb(r, true), api.FuncInstancesResource.Name, rest[0]
	case len(rest) == 2:
		a.Verb, a.Resource, a.Name = resourceVerb(r, true), api.FuncInstancesResource.Name, rest[1]
	default:
		a.Verb, a.Resource = resourceVerb(r, false), api.FuncsResource.Name
	}
	return a
}
