package test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// Issue 25, holes 3 and 4 and the Content-Type part of hole 1, on the
// secure port of a real apiserver: what each caller is authorized for is
// what is done.
func TestSecurePortServesWhatItAuthorized(t *testing.T) {
	s := framework.StartSecureAPIServer(t, `runner-token,runner,u1,"system:funcrunners"
edit-a-token,alice,u2
`)
	ctx := context.Background()
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := s.Client.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	rbacObject(t, s, "/namespaces/team-a/rolebindings", map[string]any{
		"metadata": map[string]any{"name": "alice-edit"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
		"subjects": []any{map[string]any{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}},
	})
	alice, runner := newCaller(t, s, "edit-a-token"), newCaller(t, s, "runner-token")
	waitAllowed(t, alice, "GET", "/api/funcs/template?namespace=team-a")
	tmpl := func(name, ns string) string {
		meta := `"name":"` + name + `"`
		if ns != "" {
			meta += `,"namespace":"` + ns + `"`
		}
		return `{"metadata":{` + meta + `},"spec":{"name":"` + name + `","function":"ZGVmIHJ1bihhKTogcmV0dXJuIGE=","left":"RETURN","right":"RETURN"}}`
	}

	// Hole 4: the runner's role creates instances, not templates, however
	// the path is spelled.
	for _, path := range []string{"/api/funcs//template", "/api/funcs/%2Ftemplate", "/api/funcs//template/"} {
		if code, data := runner.do("POST", path, tmpl("sneaky", "")); code != http.StatusNotFound && code != http.StatusForbidden {
			t.Errorf("runner POST %s: %d %s, want 404 or 403", path, code, data)
		}
	}
	// Hole 3: alice edits team-a only.
	alice.expect("POST", "/api/funcs/template/?namespace=team-a", tmpl("f1", "team-b"), http.StatusBadRequest,
		"the namespace of the provided object does not match the namespace sent on the request")
	alice.expect("POST", "/api/funcs/template/", tmpl("f2", "team-b"), http.StatusForbidden, `in the namespace \"team-b\"`)
	alice.expect("POST", "/api/funcs/template/", tmpl("f3", "team-a"), http.StatusCreated, `"namespace":"team-a"`)
	alice.expect("POST", "/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"c","namespace":"team-b"}}`, http.StatusBadRequest,
		"the namespace of the provided object does not match the namespace sent on the request")
	for _, ns := range []string{"default", "team-a", "team-b"} {
		for _, name := range []string{"sneaky", "f1", "f2"} {
			if _, err := s.Client.Funcs(ns).Get(ctx, name); err == nil {
				t.Errorf("template %s was stored in %s", name, ns)
			}
		}
	}

	// Hole 1's Content-Type: a ConfigMap sent as bytes is not an object,
	// on the local port (the admin) as on the secure one.
	cm := `{"metadata":{"name":"cb"},"data":{"k":"v"}}`
	for _, base := range []string{s.URL, s.SecureURL} {
		c := alice
		if base == s.URL {
			c = &caller{t: t, base: s.URL, hc: http.DefaultClient}
		}
		code, data := c.doType("POST", "/api/v1/namespaces/team-a/configmaps", cm, "application/octet-stream")
		if code != http.StatusUnsupportedMediaType {
			t.Errorf("%s: a ConfigMap as application/octet-stream: %d %s, want 415", base, code, data)
		}
	}
	if _, err := s.Client.ConfigMaps("team-a").Get(ctx, "cb"); err == nil {
		t.Error("the ConfigMap sent as bytes was stored")
	}
	// The node credentials route reads objects only too.
	token, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.NodeTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	node := newCaller(t, s, strings.TrimSpace(string(token)))
	if code, data := node.doType("POST", api.NodeCredentialsPath, `{"nodeName":"n1"}`, "text/plain"); code != http.StatusUnsupportedMediaType {
		t.Errorf("node credentials as text/plain: %d %s, want 415", code, data)
	}
}

// doType is do with a Content-Type of the caller's choice.
func (c *caller) doType(method, path, body, ctype string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("Content-Type", ctype)
	hc := c.hc
	if hc == nil {
		hc = &http.Client{Timeout: time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}
