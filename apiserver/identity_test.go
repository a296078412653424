package apiserver

import (
	"net/http"
	"strings"
	"testing"
)

// Issue 25, hole 3's class on the Kubernetes-style routes: on every route
// that takes an object (create, update, patch, status, scale, binding,
// token, finalize...), a body whose namespace is not the path's, or
// whose name is not the path's, is refused (400, in Kubernetes' words)
// and nothing is written.
func TestBodyIdentityIsTheRequests(t *testing.T) {
	et := newEngineTest(t)
	et.mustDo("POST", "/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"obj1"}}`, http.StatusCreated)
	et.mustDo("POST", "/api/funcs/template?namespace=team-a", templateBody("obj1", ""), http.StatusCreated)
	// Patches need the object: these kinds have one.
	patchable := []string{"/configmaps/", "/funcs/"}
	tried := 0
	for _, rt := range et.engine.Routes() {
		if rt.Method != http.MethodPost && rt.Method != http.MethodPut && rt.Method != http.MethodPatch {
			continue
		}
		// The custom resources' routes serve no kind here (404).
		if !strings.Contains(rt.Path, ":") || strings.Contains(rt.Path, "/api/funcs") || strings.Contains(rt.Path, ":group") ||
			strings.HasSuffix(rt.Path, "/exec") || strings.HasSuffix(rt.Path, "/portforward") {
			continue
		}
		if rt.Method == http.MethodPut && strings.HasSuffix(rt.Path, "/funcinstances/:name") {
			continue // 405: instances are written only by calls and runners
		}
		if rt.Method == http.MethodPatch && !containsAny(rt.Path, patchable) {
			continue
		}
		path := strings.NewReplacer(":ns", "team-a", ":name", "obj1").Replace(rt.Path)
		namespaceItem := isNamespaceItem(rt.Path)
		var bodies []struct{ what, meta string }
		if strings.Contains(rt.Path, ":ns") && !namespaceItem {
			bodies = append(bodies, struct{ what, meta string }{"namespace", `"name":"obj1","namespace":"team-b"`})
		}
		named := strings.Contains(rt.Path, ":name") || namespaceItem
		if named && !strings.HasSuffix(rt.Path, "/token") {
			bodies = append(bodies, struct{ what, meta string }{"name", `"name":"other"`})
		}
		for _, b := range bodies {
			body, ct := `{"metadata":{`+b.meta+`}}`, "application/json"
			if rt.Method == http.MethodPatch {
				ct = mergePatchType
			}
			a := et.doType(rt.Method, path, body, ct, "")
			tried++
			if a.code != http.StatusBadRequest || !strings.Contains(a.body, "does not match") {
				t.Errorf("%s %s with a body of another %s: %d %s, want 400 naming the mismatch", rt.Method, path, b.what, a.code, a.body)
			}
			if w := a.writes(); len(w) > 0 {
				t.Errorf("%s %s with a body of another %s: wrote %v", rt.Method, path, b.what, w)
			}
		}
	}
	if tried < 80 {
		t.Errorf("only %d requests tried", tried)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// isNamespaceItem: a route of a Namespace itself, whose :ns is its name.
func isNamespaceItem(route string) bool {
	rest, ok := strings.CutPrefix(route, "/api/v1/namespaces/:ns")
	return ok && (rest == "" || rest == "/status" || rest == "/finalize")
}
