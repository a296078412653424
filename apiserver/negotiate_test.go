package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestObjectMediaType(t *testing.T) {
	for _, tc := range []struct {
		ctype, want string
		ok          bool
	}{
		{"", "application/json", true}, // as Kubernetes takes it
		{"application/json", "application/json", true},
		{"application/json; charset=utf-8", "application/json", true},
		{"APPLICATION/JSON", "application/json", true},
		{"application/yaml", "application/yaml", true},
		{"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf", true},
		{"application/octet-stream", "", false},
		{"text/plain", "", false},
		{"application/x-www-form-urlencoded", "", false},
		{"multipart/form-data; boundary=x", "", false},
		{"text/yaml", "", false},
		{"application/cbor", "", false},
		{"application/json-patch+json", "", false},
		{"application/merge-patch+json", "", false},
		{"json", "", false},
		{";", "", false},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		if tc.ctype != "" {
			r.Header.Set("Content-Type", tc.ctype)
		}
		got, err := objectMediaType(r)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("%q: %q, %v; want %q, ok %v", tc.ctype, got, err, tc.want, tc.ok)
		}
	}
}

func TestPatchMediaType(t *testing.T) {
	for _, tc := range []struct {
		ctype string
		ok    bool
	}{
		{jsonPatchType, true}, {mergePatchType, true}, {strategicPatchType, true},
		{mergePatchType + "; charset=utf-8", true},
		{applyPatchType, true}, {"", false}, {"application/json", false}, {"application/apply-patch+cbor", false}, {"text/plain", false},
	} {
		r := httptest.NewRequest("PATCH", "/", nil)
		r.Header.Set("Content-Type", tc.ctype)
		if _, err := patchMediaType(r); (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok %v", tc.ctype, err, tc.ok)
		}
	}
}

// Issue 25, hole 1 (the Content-Type part): no Kubernetes-style route
// takes bytes sent as something else than an object (a function's result
// a runner POSTs as application/octet-stream, a form) as an object: 415,
// as Kubernetes answers, and nothing written. The function API's routes
// take whatever the reference scripts post.
func TestOnlyObjectsAreReadAsObjects(t *testing.T) {
	et := newEngineTest(t)
	et.mustDo("POST", "/api/v1/namespaces/team-a/configmaps", `{"metadata":{"name":"obj1"}}`, http.StatusCreated)
	et.mustDo("POST", "/api/funcs/template?namespace=team-a", templateBody("obj1", ""), http.StatusCreated)
	tried := 0
	for _, rt := range et.engine.Routes() {
		switch {
		case rt.Method != http.MethodPost && rt.Method != http.MethodPut && rt.Method != http.MethodPatch && rt.Method != http.MethodDelete,
			strings.Contains(rt.Path, "/api/funcs"), strings.HasSuffix(rt.Path, "/exec"), strings.HasSuffix(rt.Path, "/portforward"),
			// The custom resources' routes serve no kind here (404):
			// TestCustomResourceBodies.
			strings.Contains(rt.Path, ":group"),
			// Served with the cluster's credentials only (404 here): see
			// TestObjectMediaType.
			rt.Path == "/v1-minik8s/node-credentials",
			// 405 whatever the body: instances are written by calls and runners.
			rt.Method == http.MethodPut && strings.HasSuffix(rt.Path, "/funcinstances/:name"):
			continue
		}
		path := strings.NewReplacer(":ns", "team-a", ":name", "obj1").Replace(rt.Path)
		for _, ct := range []string{"application/octet-stream", "text/plain", "application/x-www-form-urlencoded"} {
			a := et.doType(rt.Method, path, `{"metadata":{"name":"obj1","labels":{"a":"b"}},"data":{"k":"v"}}`, ct, "")
			tried++
			if a.code != http.StatusUnsupportedMediaType || !strings.Contains(a.body, "the body of the request was in an unknown format - accepted media types include: application/") {
				t.Errorf("%s %s as %s: %d %s, want 415", rt.Method, path, ct, a.code, a.body)
			}
			if w := a.writes(); len(w) > 0 {
				t.Errorf("%s %s as %s: wrote %v", rt.Method, path, ct, w)
			}
		}
	}
	if tried < 300 {
		t.Errorf("only %d requests tried", tried)
	}
	// The probe's: a ConfigMap POSTed as a function's result.
	a := et.doType("POST", "/api/v1/namespaces/team-b/configmaps", `{"metadata":{"name":"cb"},"data":{"k":"v"}}`, "application/octet-stream", "")
	if a.code != http.StatusUnsupportedMediaType || len(a.writes()) > 0 {
		t.Errorf("a ConfigMap as application/octet-stream: %d %s, wrote %v", a.code, a.body, a.writes())
	}
	// What objects come as is read as before.
	for _, tc := range []struct{ ct, body string }{
		{"", `{"metadata":{"name":"plain"}}`},
		{"application/json; charset=utf-8", `{"metadata":{"name":"utf8"}}`},
		{"application/yaml", "metadata:\n  name: yaml\n"},
	} {
		if a := et.doType("POST", "/api/v1/namespaces/team-a/configmaps", tc.body, tc.ct, ""); a.code != http.StatusCreated {
			t.Errorf("a ConfigMap as %q: %d %s", tc.ct, a.code, a.body)
		}
	}
	if a := et.doType("DELETE", "/api/v1/namespaces/team-a/configmaps/plain", "", "text/plain", ""); a.code != http.StatusOK {
		t.Errorf("a delete without a body, whatever its Content-Type: %d %s", a.code, a.body)
	}
	// The function API reads what curl --data sends.
	if a := et.doType("POST", "/api/funcs/template?namespace=team-a", templateBody("curl", ""), "application/x-www-form-urlencoded", ""); a.code != http.StatusCreated {
		t.Errorf("a template posted as a form: %d %s", a.code, a.body)
	}
	if a := et.doType("POST", "/api/funcs/curl?namespace=team-a", "an argument", "application/octet-stream", ""); a.code != http.StatusAccepted {
		t.Errorf("a call with an octet-stream argument: %d %s", a.code, a.body)
	}
}
