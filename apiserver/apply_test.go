package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/rbac"
)

func managersOf(t *testing.T, body string) map[string]string {
	t.Helper()
	var obj struct {
		Metadata api.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &obj); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	out := map[string]string{}
	for _, e := range obj.Metadata.ManagedFields {
		out[e.Manager] = string(e.Operation)
	}
	return out
}

func resourceVersionOf(t *testing.T, body string) string {
	t.Helper()
	var obj struct {
		Metadata api.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(body), &obj); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return obj.Metadata.ResourceVersion
}

// Server-side apply, as kubectl apply --server-side sends it: create,
// no-op, conflict naming the field and its manager, force, and every other
// write recorded under its manager.
func TestServerSideApply(t *testing.T) {
	et := newEngineTest(t)
	one := "/api/v1/namespaces/team-a/configmaps/c"
	cm := func(data string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"team-a"},"data":` + data + `}`
	}
	apply := func(query, body string, want int) answer {
		t.Helper()
		a := et.doType("PATCH", one+query, body, applyPatchType, "")
		if a.code != want {
			t.Fatalf("apply %s %s: %d %s, want %d", query, body, a.code, a.body, want)
		}
		return a
	}
	a := apply("?fieldManager=alice", cm(`{"a":"1"}`), http.StatusCreated)
	if m := managersOf(t, a.body); m["alice"] != "Apply" {
		t.Fatalf("created with managers %v", m)
	}
	// The YAML kubectl may send reads as well; unchanged, the object is
	// not written again (its resourceVersion stays).
	again := apply("?fieldManager=alice", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"1\"\n", http.StatusOK)
	if rv, rv2 := resourceVersionOf(t, a.body), resourceVersionOf(t, again.body); rv != rv2 {
		t.Errorf("an unchanged apply wrote: resourceVersion %s then %s", rv, rv2)
	}

	a = apply("?fieldManager=bob", cm(`{"a":"2"}`), http.StatusConflict)
	for _, want := range []string{`Apply failed with 1 conflict: conflict with \"alice\"`, ".data.a"} {
		if !strings.Contains(a.body, want) {
			t.Errorf("conflict %s does not say %s", a.body, want)
		}
	}
	a = apply("?fieldManager=bob&force=true", cm(`{"a":"2","b":"3"}`), http.StatusOK)
	if !strings.Contains(a.body, `"a":"2"`) {
		t.Errorf("forced apply: %s", a.body)
	}
	// A dry run changes nothing.
	apply("?fieldManager=bob&dryRun=All", cm(`{"a":"9"}`), http.StatusOK)
	if got := et.mustDo("GET", one, "", http.StatusOK); !strings.Contains(got.body, `"a":"2"`) {
		t.Errorf("a dry-run apply was written: %s", got.body)
	}

	// Other writes are recorded under their fieldManager.
	merge := et.doType("PATCH", one+"?fieldManager=editor", `{"data":{"c":"4"}}`, mergePatchType, "")
	if merge.code != http.StatusOK {
		t.Fatalf("merge patch: %d %s", merge.code, merge.body)
	}
	if m := managersOf(t, merge.body); m["editor"] != "Update" || m["bob"] != "Apply" {
		t.Errorf("after a merge patch, managers %v", m)
	}
	post := et.doType("POST", "/api/v1/namespaces/team-a/configmaps?fieldManager=maker", `{"metadata":{"name":"d"},"data":{"k":"v"}}`, "application/json", "")
	if m := managersOf(t, post.body); post.code != http.StatusCreated || m["maker"] != "Update" {
		t.Errorf("create: %d, managers %v", post.code, m)
	}

	// Refused: an apply without a manager, a force of another patch, a
	// field the kind does not have, a body of another name.
	for _, tc := range []struct {
		query, ctype, body string
		code               int
		says               string
	}{
		{"", applyPatchType, cm(`{}`), http.StatusUnprocessableEntity, "fieldManager: Required value"},
		{"?force=true", mergePatchType, `{}`, http.StatusUnprocessableEntity, "force: Forbidden"},
		{"?fieldManager=x", applyPatchType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"dataa":{}}`, http.StatusBadRequest, "dataa"},
		{"?fieldManager=x", applyPatchType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`, http.StatusBadRequest, "does not match"},
		{"?fieldManager=x", applyPatchType, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"c"}}`, http.StatusBadRequest, "Secret"},
	} {
		a := et.doType("PATCH", one+tc.query, tc.body, tc.ctype, "")
		if a.code != tc.code || !strings.Contains(a.body, tc.says) {
			t.Errorf("%s %s %s: %d %s, want %d saying %s", tc.ctype, tc.query, tc.body, a.code, a.body, tc.code, tc.says)
		}
	}
	// metadata.selfLink is read and dropped, as Kubernetes does.
	if a := et.doType("PATCH", one+"?fieldManager=x", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","selfLink":"/x"}}`, applyPatchType, ""); a.code != http.StatusOK || strings.Contains(a.body, "selfLink") {
		t.Errorf("an apply with a selfLink: %d %s", a.code, a.body)
	}
	// A new object's apply is refused for what it names, and never written.
	if a := et.doType("PATCH", "/api/v1/namespaces/team-a/configmaps/n?fieldManager=x", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n"},"data":{"a":1}}`, applyPatchType, ""); a.code != http.StatusBadRequest {
		t.Errorf("a number in a ConfigMap's data: %d %s", a.code, a.body)
	}
	et.mustDo("GET", "/api/v1/namespaces/team-a/configmaps/n", "", http.StatusNotFound)
}

// An apply is authorized as a patch and admitted as the write it becomes:
// a user may not apply into a namespace it may not write, nor create
// through an apply what it may not create.
func TestApplyIsAuthorized(t *testing.T) {
	et := newEngineTest(t)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}`
	if a := et.doType("PATCH", "/api/v1/namespaces/team-b/configmaps/c?fieldManager=alice", body, applyPatchType, editAToken); a.code != http.StatusForbidden {
		t.Errorf("alice's apply in team-b: %d %s", a.code, a.body)
	}
	et.mustDo("GET", "/api/v1/namespaces/team-b/configmaps/c", "", http.StatusNotFound)
	if a := et.doType("PATCH", "/api/v1/namespaces/team-a/configmaps/c?fieldManager=alice", body, applyPatchType, editAToken); a.code != http.StatusCreated {
		t.Errorf("alice's apply in team-a: %d %s", a.code, a.body)
	}

	// A user who may patch ConfigMaps but not create them applies to one
	// that exists, and may not create one by applying.
	et.s.tokens["patch-token"] = rbac.User{Name: "pat", Groups: []string{rbac.AllAuthenticated}}
	et.mustDo("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles",
		`{"metadata":{"name":"patcher"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","patch"]}]}`, http.StatusCreated)
	et.mustDo("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings",
		`{"metadata":{"name":"pat"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"patcher"},`+
			`"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"pat"}]}`, http.StatusCreated)
	patch := rbac.Attributes{User: rbac.User{Name: "pat", Groups: []string{rbac.AllAuthenticated}}, Verb: "patch",
		Resource: api.ConfigMapsResource.Name, Namespace: "team-a", Name: "c", ResourceRequest: true}
	deadline := time.Now().Add(30 * time.Second)
	for !et.s.authz.Allows(patch) {
		if time.Now().After(deadline) {
			t.Fatal("the authorizer never saw pat's binding")
		}
		time.Sleep(10 * time.Millisecond)
	}
	changed := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"b":"2"}}`
	if a := et.doType("PATCH", "/api/v1/namespaces/team-a/configmaps/c?fieldManager=pat", changed, applyPatchType, "patch-token"); a.code != http.StatusOK {
		t.Errorf("pat's apply to an existing ConfigMap: %d %s", a.code, a.body)
	}
	created := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"},"data":{"b":"2"}}`
	if a := et.doType("PATCH", "/api/v1/namespaces/team-a/configmaps/new?fieldManager=pat", created, applyPatchType, "patch-token"); a.code != http.StatusForbidden ||
		!strings.Contains(a.body, `cannot create resource \"configmaps\"`) {
		t.Errorf("pat's apply creating a ConfigMap: %d %s", a.code, a.body)
	}
	et.mustDo("GET", "/api/v1/namespaces/team-a/configmaps/new", "", http.StatusNotFound)
}

// The function kinds apply in their minik8s.io/v1 form.
func TestApplyFunctionKinds(t *testing.T) {
	et := newEngineTest(t)
	path := api.FuncsResource.Served().Path("team-a", "f")
	body := `{"apiVersion":"minik8s.io/v1","kind":"Func","metadata":{"name":"f"},"spec":{"function":"def run(a):\n  return a\n"}}`
	a := et.doType("PATCH", path+"?fieldManager=alice", body, applyPatchType, "")
	if a.code != http.StatusCreated {
		t.Fatalf("apply of a Func: %d %s", a.code, a.body)
	}
	if a = et.doType("PATCH", path+"?fieldManager=alice", body, applyPatchType, ""); a.code != http.StatusOK {
		t.Fatalf("second apply of a Func: %d %s", a.code, a.body)
	}
	if a := et.doType("PATCH", api.FuncsResource.Path("team-a", "f")+"?fieldManager=alice", body, applyPatchType, ""); a.code != http.StatusBadRequest ||
		!strings.Contains(a.body, "/apis/minik8s.io/v1") {
		t.Errorf("apply at the reference routes: %d %s", a.code, a.body)
	}
}
