package apiserver

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/storage"
)

// Issue 25, hole 4: a caller with the runner's role (funcinstances
// create, no funcs create) posting a template through a path the
// authorizer read as an instance. Every spelling is refused before any
// handler, and nothing is stored.
func TestRunnerCannotWriteTemplatesThroughOddPaths(t *testing.T) {
	et := newEngineTest(t)
	for _, path := range []string{"/api/funcs//template", "/api/funcs//template/", "/api/funcs/%2Ftemplate",
		"/api/funcs/x/../template", "/api/funcs/./template", "/api/funcs/template/", "/api/funcs/template"} {
		for _, ns := range []string{"", "?namespace=team-a"} {
			a := et.do("POST", path+ns, templateBody("sneaky", ""), runnerToken)
			if a.code != http.StatusForbidden && a.code != http.StatusNotFound {
				t.Errorf("runner POST %s%s: %d %s, want 403 or 404", path, ns, a.code, a.body)
			}
			if a.attrs != nil || len(a.writes()) > 0 {
				t.Errorf("runner POST %s%s: a handler ran (%v) and wrote %v", path, ns, a.attrs, a.writes())
			}
		}
	}
	for _, ns := range []string{"default", "team-a"} {
		if _, err := et.s.registries[api.FuncsResource.Name].Get(context.Background(), ns, "sneaky"); err == nil {
			t.Errorf("template sneaky was stored in %s", ns)
		}
	}
	// The role still does what it is for: steps of instances.
	if a := et.do("PUT", "/api/funcs/RETURN/no-such-instance", "x", runnerToken); a.code != http.StatusNotFound {
		t.Errorf("runner PUT /api/funcs/RETURN/ID: %d %s, want 404 (allowed, no such instance)", a.code, a.body)
	}
}

// Issue 25, hole 3: the namespace a template is written to is the one
// authorized. A query naming one namespace and a body another is 400; a
// body alone names the namespace authorized.
func TestTemplateNamespaceIsTheOneAuthorized(t *testing.T) {
	et := newEngineTest(t)
	funcs := et.s.registries[api.FuncsResource.Name]
	stored := func(ns, name string) bool {
		_, err := funcs.Get(context.Background(), ns, name)
		return err == nil
	}
	for _, tc := range []struct {
		what, method, target, body, token string
		code                              int
		storedIn                          string
	}{
		{"the probe's: query a, body b", "POST", "/api/funcs/template/?namespace=team-a", templateBody("f1", "team-b"), editAToken, 400, ""},
		{"query a, body b, as b's editor", "POST", "/api/funcs/template/?namespace=team-a", templateBody("f2", "team-b"), editBToken, 400, ""},
		{"query a, body b, as the admin", "POST", "/api/funcs/template/?namespace=team-a", templateBody("f3", "team-b"), "", 400, ""},
		{"body b alone, as a's editor", "POST", "/api/funcs/template/", templateBody("f4", "team-b"), editAToken, 403, ""},
		{"body b alone, as b's editor", "POST", "/api/funcs/template/", templateBody("f5", "team-b"), editBToken, 201, "team-b"},
		{"query and body agree", "POST", "/api/funcs/template/?namespace=team-a", templateBody("f6", "team-a"), editAToken, 201, "team-a"},
		{"query alone", "POST", "/api/funcs/template?namespace=team-a", templateBody("f7", ""), editAToken, 201, "team-a"},
		{"neither: default, which a's editor may not write", "POST", "/api/funcs/template", templateBody("f8", ""), editAToken, 403, ""},
		{"update: query a, body b", "PUT", "/api/funcs/template/f6?namespace=team-a", templateBody("f6", "team-b"), editAToken, 400, ""},
		{"update: body b alone, as a's editor", "PUT", "/api/funcs/template/f5", templateBody("f5", "team-b"), editAToken, 403, ""},
		{"update: body a's, path another name", "PUT", "/api/funcs/template/f6?namespace=team-a", templateBody("other", "team-a"), editAToken, 400, ""},
		{"a namespace that is no name", "POST", "/api/funcs/template", templateBody("f9", "a/b"), "", 400, ""},
		{"a query namespace that is no name", "POST", "/api/funcs/template?namespace=..", templateBody("f10", ""), "", 400, ""},
		{"two query namespaces", "POST", "/api/funcs/template?namespace=team-a&namespace=team-b", templateBody("f11", ""), "", 400, ""},
	} {
		a := et.do(tc.method, tc.target, tc.body, tc.token)
		if a.code != tc.code {
			t.Errorf("%s: %s %s: %d %s, want %d", tc.what, tc.method, tc.target, a.code, a.body, tc.code)
		}
		if tc.code == 400 && tc.method == "POST" && !strings.Contains(a.body, "namespace") {
			t.Errorf("%s: the answer does not name the namespace: %s", tc.what, a.body)
		}
		name := tc.body[strings.Index(tc.body, `"name":"`)+8:]
		name = name[:strings.Index(name, `"`)]
		for _, ns := range []string{"default", "team-a", "team-b"} {
			if tc.method == "POST" && stored(ns, name) != (ns == tc.storedIn) {
				t.Errorf("%s: %s stored in %s: %v, want it only in %q", tc.what, name, ns, stored(ns, name), tc.storedIn)
			}
		}
		for _, w := range a.writes() {
			if tc.storedIn == "" || !strings.HasPrefix(w, storage.KeyRoot+"funcs/"+tc.storedIn+"/") {
				t.Errorf("%s: wrote %s", tc.what, w)
			}
		}
	}
}
