package ingress

import (
	"sort"
	"strings"

	"minik8s/pkg/api"
)

// A table is the routes of every Ingress the node serves, built anew on
// each change and swapped in whole: a request in flight keeps the table it
// started with, so an update drops no connection.
type table struct {
	// exact, wildcard (by the domain under "*.") and any-host rules.
	exact    map[string][]route
	wildcard map[string][]route
	anyHost  []route
	// fallback is the default backend of the oldest Ingress that has one.
	fallback *target
}

// route is one path of a rule.
type route struct {
	path     string // without a trailing "/" for prefixes ("" for "/")
	exact    bool
	target   target
	original string // as written, for ties
}

// target is a Service port of an Ingress's namespace.
type target struct {
	namespace, ingress string
	backend            api.IngressBackend
}

// served reports whether the controller serves ing: it names a class of
// this controller, or none (minik8s's controller takes those, as Traefik
// does by default).
func served(ing *api.Ingress, classes map[string]string) bool {
	if ing.Spec.IngressClassName == nil {
		return true
	}
	return classes[*ing.Spec.IngressClassName] == api.IngressController
}

// buildTable makes the table of ings (those served), oldest Ingress first:
// where two Ingresses give the same host and path, the older wins, as in
// most controllers.
func buildTable(ings []*api.Ingress) *table {
	sort.Slice(ings, func(i, j int) bool {
		a, b := ings[i], ings[j]
		if ta, tb := a.CreationTimestamp, b.CreationTimestamp; ta != nil && tb != nil && !ta.Equal(*tb) {
			return ta.Before(*tb)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	t := &table{exact: map[string][]route{}, wildcard: map[string][]route{}}
	for _, ing := range ings {
		if t.fallback == nil && ing.Spec.DefaultBackend != nil {
			t.fallback = &target{namespace: ing.Namespace, ingress: ing.Name, backend: *ing.Spec.DefaultBackend}
		}
		for _, rule := range ing.Spec.Rules {
			if rule.HTTP == nil {
				continue
			}
			for _, p := range rule.HTTP.Paths {
				r := newRoute(p, target{namespace: ing.Namespace, ingress: ing.Name, backend: p.Backend})
				host := strings.ToLower(rule.Host)
				switch {
				case host == "":
					t.anyHost = append(t.anyHost, r)
				case strings.HasPrefix(host, "*."):
					t.wildcard[host[2:]] = append(t.wildcard[host[2:]], r)
				default:
					t.exact[host] = append(t.exact[host], r)
				}
			}
		}
	}
	return t
}

func newRoute(p api.HTTPIngressPath, tg target) route {
	path := p.Path
	if path == "" {
		path = "/"
	}
	exact := p.PathType != nil && *p.PathType == api.PathTypeExact
	r := route{path: path, exact: exact, target: tg, original: path}
	if !exact {
		r.path = strings.TrimRight(path, "/")
	}
	return r
}

// match finds the target of a request for host (without its port) and
// path: the rules of the exact host, else of a wildcard covering it, else
// of any host; among the paths that match, the longest, Exact before
// Prefix at the same length (Kubernetes' rules); else the default backend.
func (t *table) match(host, path string) (target, bool) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if r, ok := longest(t.exact[host], path); ok {
		return r.target, true
	}
	if _, domain, ok := strings.Cut(host, "."); ok {
		if r, ok := longest(t.wildcard[domain], path); ok {
			return r.target, true
		}
	}
	if r, ok := longest(t.anyHost, path); ok {
		return r.target, true
	}
	if t.fallback != nil {
		return *t.fallback, true
	}
	return target{}, false
}

func longest(routes []route, path string) (route, bool) {
	var best route
	found := false
	for _, r := range routes {
		if !r.matches(path) {
			continue
		}
		if !found || len(r.path) > len(best.path) || (len(r.path) == len(best.path) && r.exact && !best.exact) {
			best, found = r, true
		}
	}
	return best, found
}

// matches: an Exact path is the request's path itself; a Prefix matches
// by whole elements ("/foo" matches "/foo" and "/foo/bar", not "/foobar").
func (r route) matches(path string) bool {
	if r.exact {
		return path == r.path
	}
	if r.path == "" {
		return true
	}
	rest, ok := strings.CutPrefix(path, r.path)
	return ok && (rest == "" || rest[0] == '/')
}
