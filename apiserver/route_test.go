package apiserver

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage"
)

// What authorization judges is what the route gin matched says, read once.
func TestRequestAttributes(t *testing.T) {
	et := newEngineTest(t)
	for _, tc := range []struct {
		method, target string
		want           rbac.Attributes
	}{
		{"GET", "/api/v1/namespaces/default/pods", rbac.Attributes{Verb: "list", Resource: "pods", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=-1", rbac.Attributes{Verb: "watch", Resource: "pods", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=-1", rbac.Attributes{Verb: "watch", Resource: "pods", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/default/pods?watch=false", rbac.Attributes{Verb: "list", Resource: "pods", Namespace: "default", ResourceRequest: true}},
		// A list of one name is authorized as that name, as in Kubernetes.
		{"GET", "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dweb", rbac.Attributes{Verb: "list", Resource: "pods", Name: "web", Namespace: "default", ResourceRequest: true}},
		// A named GET is a get whatever ?watch says, as in Kubernetes.
		{"GET", "/api/v1/namespaces/default/pods/web?watch=true", rbac.Attributes{Verb: "get", Resource: "pods", Name: "web", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/ns1/pods/web/log", rbac.Attributes{Verb: "get", Resource: "pods", Subresource: "log", Name: "web", Namespace: "ns1", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/ns1/pods/web/exec?command=sh", rbac.Attributes{Verb: "create", Resource: "pods", Subresource: "exec", Name: "web", Namespace: "ns1", ResourceRequest: true}},
		{"GET", "/apis/minik8s.io/v1/namespaces/ns1/funcs/f", rbac.Attributes{Verb: "get", APIGroup: "minik8s.io", Resource: "funcs", Name: "f", Namespace: "ns1", ResourceRequest: true}},
		{"PUT", "/api/v1/nodes/n1/status", rbac.Attributes{Verb: "update", Resource: "nodes", Subresource: "status", Name: "n1", ResourceRequest: true}},
		{"GET", "/api/v1/pods", rbac.Attributes{Verb: "list", Resource: "pods", ResourceRequest: true}},
		{"DELETE", "/api/v1/namespaces/team", rbac.Attributes{Verb: "delete", Resource: "namespaces", Name: "team", Namespace: "team", ResourceRequest: true}},
		{"PUT", "/api/v1/namespaces/team/finalize", rbac.Attributes{Verb: "update", Resource: "namespaces", Subresource: "finalize", Name: "team", Namespace: "team", ResourceRequest: true}},
		{"POST", "/apis/apps/v1/namespaces/default/replicasets", rbac.Attributes{Verb: "create", APIGroup: "apps", Resource: "replicasets", Namespace: "default", ResourceRequest: true}},
		// An older version of a kind is the same resource to RBAC.
		{"POST", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", rbac.Attributes{Verb: "create", APIGroup: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: "default", ResourceRequest: true}},
		{"PUT", "/apis/apps/v1/namespaces/default/replicasets/rs/scale", rbac.Attributes{Verb: "update", APIGroup: "apps", Resource: "replicasets", Subresource: "scale", Name: "rs", Namespace: "default", ResourceRequest: true}},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", rbac.Attributes{Verb: "create", APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", ResourceRequest: true}},
		{"GET", "/apis/metrics.k8s.io/v1beta1/namespaces/ns1/pods/p", rbac.Attributes{Verb: "get", APIGroup: "metrics.k8s.io", Resource: "pods", Name: "p", Namespace: "ns1", ResourceRequest: true}},
		{"GET", "/healthz", rbac.Attributes{Verb: "get"}},
		{"GET", "/metrics", rbac.Attributes{Verb: "get"}},
		{"GET", "/apis/apps/v1", rbac.Attributes{Verb: "get"}},
		// The function API.
		{"POST", "/api/funcs/template", rbac.Attributes{Verb: "create", Resource: "funcs", Namespace: "default", ResourceRequest: true}},
		{"POST", "/api/funcs/template/", rbac.Attributes{Verb: "create", Resource: "funcs", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/funcs/template", rbac.Attributes{Verb: "list", Resource: "funcs", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/funcs", rbac.Attributes{Verb: "list", Resource: "funcs", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/funcs/template?watch=true&timeoutSeconds=-1", rbac.Attributes{Verb: "watch", Resource: "funcs", Namespace: "default", ResourceRequest: true}},
		{"DELETE", "/api/funcs/template/hello", rbac.Attributes{Verb: "delete", Resource: "funcs", Name: "hello", Namespace: "default", ResourceRequest: true}},
		{"GET", "/api/watch/funcs/template/hello?timeoutSeconds=-1", rbac.Attributes{Verb: "watch", Resource: "funcs", Name: "hello", Namespace: "default", ResourceRequest: true}},
		{"POST", "/api/funcs/hello?namespace=team", rbac.Attributes{Verb: "create", Resource: "funcs", Subresource: "invoke", Name: "hello", Namespace: "team", ResourceRequest: true}},
		{"GET", "/api/funcs/0b7c", rbac.Attributes{Verb: "get", Resource: "funcinstances", Name: "0b7c", Namespace: "default", ResourceRequest: true}},
		{"PUT", "/api/funcs/RETURN/0b7c", rbac.Attributes{Verb: "update", Resource: "funcinstances", Name: "0b7c", Namespace: "default", ResourceRequest: true}},
	} {
		body := ""
		if tc.method == "POST" && strings.HasPrefix(tc.target, "/api/funcs/template") {
			body = templateBody("hello", "")
		}
		a := et.do(tc.method, tc.target, body, "")
		if a.attrs == nil {
			t.Errorf("%s %s: no handler ran (%d %s)", tc.method, tc.target, a.code, a.body)
			continue
		}
		got := *a.attrs
		got.User = rbac.User{}
		tc.want.Path = strings.SplitN(tc.target, "?", 2)[0]
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s:\n got  %+v\n want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}

// Every route gin serves, and odd spellings of its path (doubled and
// trailing slashes, dot segments, %2F, empty names), either reaches no
// handler or reaches one that reads and writes only what authorization
// judged: the resource, namespace and name of the request (and the few
// other kinds a handler is known to need, listed in knownReach).
func TestRoutesAuthorizeWhatTheyServe(t *testing.T) {
	et := newEngineTest(t)
	et.mustDo("POST", "/api/funcs/template?namespace=team-a", templateBody("hello", ""), http.StatusCreated)
	et.mustDo("POST", "/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"obj1"}}`, http.StatusCreated)
	routes := et.engine.Routes()
	if len(routes) < 100 {
		t.Fatalf("only %d routes", len(routes))
	}
	requests, handled := 0, 0
	for _, rt := range routes {
		for _, path := range pathVariants(rt.Path) {
			body, ct := "", ""
			switch rt.Method {
			case http.MethodPost, http.MethodPut:
				body, ct = `{"metadata":{"name":"obj1"}}`, "application/json"
				if strings.Contains(rt.Path, "/api/funcs") {
					body = templateBody("hello", "")
				}
			case http.MethodPatch:
				body, ct = `{"metadata":{"labels":{"a":"b"}}}`, mergePatchType
			}
			target := path + "?timeoutSeconds=-1"
			if strings.Contains(rt.Path, "/api/funcs") || strings.Contains(rt.Path, "/api/watch/") {
				target += "&namespace=team-a"
			}
			a := et.doType(rt.Method, target, body, ct, "")
			requests++
			if a.attrs == nil {
				if w := a.writes(); len(w) > 0 {
					t.Errorf("%s %s (%s): %d and no handler ran, yet it wrote %v", rt.Method, path, rt.Path, a.code, w)
				}
				continue
			}
			handled++
			for _, tc := range a.touches {
				if err := agrees(*a.attrs, tc); err != nil {
					t.Errorf("%s %s (route %s): %d: authorized %s, but the handler %v", rt.Method, path, rt.Path, a.code, describe(*a.attrs), err)
				}
			}
		}
	}
	t.Logf("%d routes, %d requests, %d reached a handler", len(routes), requests, handled)
}

func describe(a rbac.Attributes) string {
	if !a.ResourceRequest {
		return a.Verb + " " + a.Path
	}
	r := a.Resource
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	return fmt.Sprintf("%s %s %q in %q", a.Verb, r, a.Name, a.Namespace)
}

// templateBody is a function template as the reference scripts post it.
func templateBody(name, ns string) string {
	meta := `"name":"` + name + `"`
	if ns != "" {
		meta += `,"namespace":"` + ns + `"`
	}
	return `{"apiVersion":"v2","kind":"Func","metadata":{` + meta + `},"spec":{"name":"` + name +
		`","function":"ZGVmIHJ1bihhcmcpOgogICAgcmV0dXJuIGFyZwo=","left":"RETURN","right":"RETURN"}}`
}

// pathVariants fills a route's parameters and spells the path oddly.
func pathVariants(route string) []string {
	segs := strings.Split(route, "/")
	fill := func(seg, value string) string {
		switch {
		case strings.HasPrefix(seg, ":"):
			return value
		case strings.HasPrefix(seg, "*"):
			return strings.TrimPrefix(value, "/")
		}
		return seg
	}
	values := func(seg string) []string {
		switch seg {
		case ":ns":
			return []string{"team-a"}
		case ":name":
			return []string{"obj1", "hello"}
		case "*path":
			return funcPaths
		case "*file":
			return []string{"/index.html", "/session"}
		case "*gv":
			return []string{"/api/v1"}
		}
		return []string{""}
	}
	var out []string
	var build func(i int, acc []string)
	build = func(i int, acc []string) {
		if i == len(segs) {
			out = append(out, strings.Join(acc, "/"))
			return
		}
		for _, v := range values(segs[i]) {
			build(i+1, append(slices.Clone(acc), fill(segs[i], v)))
		}
	}
	build(0, nil)
	var odd []string
	for _, p := range out {
		odd = append(odd, p, p+"/", "/"+p, strings.Replace(p, "/", "//", 2))
		if i := strings.LastIndex(p, "/"); i > 0 {
			odd = append(odd, p[:i]+"/"+p[i:])
		}
	}
	// Each parameter replaced by an odd name.
	for i, seg := range segs {
		if !strings.HasPrefix(seg, ":") {
			continue
		}
		for _, v := range []string{"", ".", "..", "a%2Fb", "%2E%2E", "team-a%2Fconfigmaps"} {
			s := slices.Clone(segs)
			s[i] = v
			for j := range s {
				if j != i {
					s[j] = fill(s[j], values(s[j])[0])
				}
			}
			odd = append(odd, strings.Join(s, "/"))
		}
	}
	return odd
}

// funcPaths are spellings of the function API's paths.
var funcPaths = []string{"/", "/template", "/template/", "//template", "/template//", "/./template", "/../template",
	"/template/.", "/template/..", "/template/hello", "/template/hello/", "/template//hello", "/template/hello/x",
	"/hello", "/hello/", "//hello", "/hello/inst1", "/RETURN/inst1", "/x/template", "/template%2Fhello",
	"/a%2F..%2Ftemplate", "/%2Ftemplate", "/template/%2E%2E"}

// knownReach is what handlers read or write beyond the resource they
// serve, by the resource (and subresource) authorized: reads, and writes.
var knownReach = map[string]struct{ reads, writes []string }{
	"services":                 {reads: []string{"ipallocations", "nodeportallocations"}, writes: []string{"ipallocations", "nodeportallocations"}},
	"nodes":                    {reads: []string{"podcidrallocations"}, writes: []string{"podcidrallocations", "nodepasswords"}},
	"funcs":                    {reads: []string{"triggers", "endpoints"}}, // GET /api/funcs sums them up
	"funcs/invoke":             {writes: []string{"funcinstances"}},
	"funcinstances":            {reads: []string{"funcs"}}, // a step names the function it goes on with
	"triggers":                 {reads: []string{"funcs", "apps"}},
	"serviceaccounts/token":    {reads: []string{"pods"}},
	"pods/log":                 {reads: []string{"nodes"}},
	"pods/eviction":            {reads: []string{"poddisruptionbudgets"}, writes: []string{"poddisruptionbudgets"}},
	"pods/exec":                {reads: []string{"nodes"}},
	"pods/portforward":         {reads: []string{"nodes"}},
	"nodes@metrics.k8s.io":     {reads: []string{"nodes"}},
	"pods@metrics.k8s.io":      {reads: []string{"nodes", "pods"}},
	"selfsubjectaccessreviews": {},
	"ingresses":                {reads: []string{"ingressclasses"}},  // the default class, for one that names none
	"pods":                     {reads: []string{"priorityclasses"}}, // the class a new pod names, or the default
	"persistentvolumeclaims":   {reads: []string{"storageclasses"}},  // the default class, for one that names none
}

// agrees says whether a store access fits what authorization judged.
func agrees(a rbac.Attributes, t touch) error {
	verb := "read"
	if t.write {
		verb = "wrote"
	}
	if !a.ResourceRequest {
		return fmt.Errorf("%s %s", verb, t.key)
	}
	res, ns, name, namespaced := splitKey(t.key)
	if res == a.Resource && a.APIGroup != "metrics.k8s.io" {
		switch {
		case namespaced && a.Namespace != "" && ns != a.Namespace && !(res == "triggers" && !t.write):
			// (A trigger's HTTP path is checked against every namespace's.)
			return fmt.Errorf("%s %s, in namespace %q", verb, t.key, ns)
		case a.Name != "" && name != "" && name != a.Name:
			return fmt.Errorf("%s %s, another object", verb, t.key)
		}
		return nil
	}
	key := a.Resource
	if a.Subresource != "" {
		key += "/" + a.Subresource
	}
	if a.APIGroup == "metrics.k8s.io" {
		key += "@" + a.APIGroup
	}
	reach := knownReach[key]
	allowed := reach.reads
	if t.write {
		allowed = reach.writes
	}
	if !slices.Contains(allowed, res) {
		return fmt.Errorf("%s %s, of another kind", verb, t.key)
	}
	if namespaced && a.Namespace != "" && ns != a.Namespace {
		return fmt.Errorf("%s %s, in namespace %q", verb, t.key, ns)
	}
	return nil
}

// splitKey reads a store key (or prefix) as the resource, namespace and
// name it holds.
func splitKey(key string) (res, ns, name string, namespaced bool) {
	parts := strings.Split(strings.TrimPrefix(key, storage.KeyRoot), "/")
	res = parts[0]
	r, ok := api.LookupResource(res)
	namespaced = ok && r.Namespaced
	rest := parts[1:]
	if namespaced && len(rest) > 0 {
		ns, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		name = rest[0]
	}
	return res, ns, name, namespaced
}
