package ingress

import (
	"testing"
	"time"

	"minik8s/pkg/api"
)

func ingress(name string, age int, rules ...api.IngressRule) *api.Ingress {
	t := time.Unix(int64(1000-age), 0)
	return &api.Ingress{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: &t},
		Spec: api.IngressSpec{Rules: rules}}
}

func rule(host string, paths ...api.HTTPIngressPath) api.IngressRule {
	return api.IngressRule{Host: host, IngressRuleValue: api.IngressRuleValue{HTTP: &api.HTTPIngressRuleValue{Paths: paths}}}
}

func path(p, typ, svc string) api.HTTPIngressPath {
	return api.HTTPIngressPath{Path: p, PathType: &typ,
		Backend: api.IngressBackend{Service: &api.IngressServiceBackend{Name: svc, Port: api.ServiceBackendPort{Number: 80}}}}
}

func TestMatch(t *testing.T) {
	withDefault := ingress("fallback", 1, rule("c.example.com", path("/", api.PathTypePrefix, "c")))
	withDefault.Spec.DefaultBackend = &api.IngressBackend{Service: &api.IngressServiceBackend{Name: "default", Port: api.ServiceBackendPort{Number: 80}}}
	tbl := buildTable([]*api.Ingress{
		ingress("newer", 1, rule("a.example.com", path("/", api.PathTypePrefix, "shadowed"))),
		ingress("web", 10,
			rule("a.example.com",
				path("/", api.PathTypePrefix, "root"),
				path("/foo", api.PathTypePrefix, "foo"),
				path("/foo/bar/", api.PathTypePrefix, "foobar"),
				path("/foo", api.PathTypeExact, "foo-exact"),
				path("/x", api.PathTypeImplementationSpecific, "x")),
			rule("*.b.example.com", path("/", api.PathTypePrefix, "wild")),
			rule("", path("/any", api.PathTypePrefix, "any"))),
		withDefault,
	})
	cases := []struct {
		host, path, want string
	}{
		{"a.example.com", "/", "root"},
		{"A.Example.COM", "/other", "root"},
		{"a.example.com", "/foo", "foo-exact"}, // Exact before Prefix at the same length
		{"a.example.com", "/foo/", "foo"},
		{"a.example.com", "/foobar", "root"}, // prefixes match whole elements
		{"a.example.com", "/foo/bar", "foobar"},
		{"a.example.com", "/foo/bar/baz", "foobar"},
		{"a.example.com", "/x/y", "x"},
		{"one.b.example.com", "/", "wild"},
		{"two.one.b.example.com", "/", "default"}, // a wildcard covers one label
		{"b.example.com", "/", "default"},
		{"elsewhere", "/any/thing", "any"},
		{"a.example.com.", "/", "root"},
		{"elsewhere", "/", "default"},
		{"c.example.com", "/", "c"},
	}
	for _, c := range cases {
		got, ok := tbl.match(c.host, c.path)
		name := ""
		if ok {
			name = got.backend.Service.Name
		}
		if name != c.want {
			t.Errorf("%s%s: routed to %q, want %q", c.host, c.path, name, c.want)
		}
	}
	if _, ok := buildTable(nil).match("a", "/"); ok {
		t.Error("an empty table routed a request")
	}
}

func TestServed(t *testing.T) {
	ours, other, missing := "minik8s", "nginx", "gone"
	classes := map[string]string{ours: api.IngressController, other: "k8s.io/ingress-nginx"}
	for _, c := range []struct {
		class *string
		want  bool
	}{{nil, true}, {&ours, true}, {&other, false}, {&missing, false}} {
		ing := &api.Ingress{Spec: api.IngressSpec{IngressClassName: c.class}}
		if got := served(ing, classes); got != c.want {
			t.Errorf("class %v: served %v, want %v", c.class, got, c.want)
		}
	}
}
