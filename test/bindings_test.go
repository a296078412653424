package test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// TestBindingNeedsItsRole: a namespace admin's binding to a role that is
// not there yet (which would grant whatever the role later says) is
// Kubernetes' 404 naming the role, dry runs too, nothing stored; so is a
// cluster binding's; a role it holds binds, one it does not is 403, bind
// on the role lets it name one not there yet; roleRef cannot change (422)
// and an update is judged as a create.
func TestBindingNeedsItsRole(t *testing.T) {
	s := framework.StartSecureAPIServer(t, secureTokens+"nsadmin-token,nsadmin,u10\n")
	nsadmin := newCaller(t, s, "nsadmin-token")
	admin := func(path string, obj any) { t.Helper(); rbacObject(t, s, path, obj) }
	if code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces", "application/json", []byte(`{"metadata":{"name":"team"}}`)); code != http.StatusCreated {
		t.Fatalf("namespace: %d %s", code, data)
	}
	admin("/namespaces/team/rolebindings", binding("RoleBinding", "team", "nsadmin", "ClusterRole", "admin", userSubject("nsadmin")))
	rbs, crbs := "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
	waitAllowed(t, nsadmin, "GET", rbs)
	body := func(kind, ns, name, roleKind, role string) string {
		return mustJSON(binding(kind, ns, name, roleKind, role, userSubject("viewer")))
	}
	stored := func(path string) int {
		code, _ := httpDo(t, "GET", s.URL+path, "", nil)
		return code
	}

	// The reproduction: 201 before.
	for _, q := range []string{"?dryRun=All", ""} {
		nsadmin.expect("POST", rbs+q, body("RoleBinding", "team", "future", "ClusterRole", "future"), http.StatusNotFound,
			`clusterroles.rbac.authorization.k8s.io \"future\" not found`)
	}
	nsadmin.expect("POST", rbs, body("RoleBinding", "team", "future-role", "Role", "future"), http.StatusNotFound,
		`roles.rbac.authorization.k8s.io \"future\" not found`)
	for _, name := range []string{"future", "future-role"} {
		if code := stored(rbs + "/" + name); code != http.StatusNotFound {
			t.Errorf("refused binding %s was stored: GET %d", name, code)
		}
	}

	// Once the role exists, and holds nothing the namespace admin lacks, it binds.
	admin("/clusterroles", map[string]any{"metadata": map[string]any{"name": "future"},
		"rules": []api.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}})
	nsadmin.expect("POST", rbs, body("RoleBinding", "team", "future", "ClusterRole", "future"), http.StatusCreated, "future")
	nsadmin.expect("POST", rbs, body("RoleBinding", "team", "root", "ClusterRole", "cluster-admin"), http.StatusForbidden,
		`User \"nsadmin\" may not grant what it does not hold`)

	// roleRef cannot change; a role not there is judged first, as in Kubernetes.
	nsadmin.expect("PUT", rbs+"/future", body("RoleBinding", "team", "future", "ClusterRole", "view"), http.StatusUnprocessableEntity,
		"roleRef: Invalid value")
	if code, data := nsadmin.send("PATCH", rbs+"/future", "application/merge-patch+json", `{"roleRef":{"name":"edit"}}`); code != http.StatusUnprocessableEntity {
		t.Errorf("patching roleRef: %d %s", code, data)
	}
	if code, data := nsadmin.send("PATCH", rbs+"/future", "application/merge-patch+json", `{"roleRef":{"name":"later"}}`); code != http.StatusNotFound {
		t.Errorf("patching roleRef to a role not there: %d %s", code, data)
	}
	// An update is judged as a create: new subjects of a binding to a role
	// the writer does not hold are refused.
	admin("/namespaces/team/rolebindings", binding("RoleBinding", "team", "ops", "ClusterRole", "cluster-admin", userSubject("ops")))
	if code, data := nsadmin.send("PATCH", rbs+"/ops", "application/merge-patch+json", `{"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"nsadmin"}]}`); code != http.StatusForbidden {
		t.Errorf("adding itself to a cluster-admin binding: %d %s", code, data)
	}

	// bind on a role lets its holder name it, there or not, as in Kubernetes.
	admin("/clusterroles", map[string]any{"metadata": map[string]any{"name": "bind-later"},
		"rules": []api.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{api.RBACGroup}, Resources: []string{"clusterroles"}, ResourceNames: []string{"later"}}}})
	admin("/namespaces/team/rolebindings", binding("RoleBinding", "team", "bind-later", "ClusterRole", "bind-later", userSubject("nsadmin")))
	waitCan(t, nsadmin, "team", "bind", "clusterroles", "later")
	nsadmin.expect("POST", rbs, body("RoleBinding", "team", "later", "ClusterRole", "later"), http.StatusCreated, "later")

	// A cluster binding: the writer must hold the role everywhere.
	admin("/clusterroles", map[string]any{"metadata": map[string]any{"name": "crb-writer"},
		"rules": []api.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{api.RBACGroup}, Resources: []string{"clusterrolebindings"}}}})
	admin("/clusterrolebindings", binding("ClusterRoleBinding", "", "crb-writer", "ClusterRole", "crb-writer", userSubject("nsadmin")))
	waitCan(t, nsadmin, "", "create", "clusterrolebindings", "")
	nsadmin.expect("POST", crbs, body("ClusterRoleBinding", "", "future2", "ClusterRole", "future2"), http.StatusNotFound,
		`clusterroles.rbac.authorization.k8s.io \"future2\" not found`)
	nsadmin.expect("POST", crbs, body("ClusterRoleBinding", "", "view-all", "ClusterRole", "view"), http.StatusForbidden,
		"may not grant what it does not hold")
	nsadmin.expect("POST", crbs, body("ClusterRoleBinding", "", "role", "Role", "future"), http.StatusUnprocessableEntity,
		`\"Role\" is not supported: ClusterRole`)
	for _, name := range []string{"future2", "view-all", "role"} {
		if code := stored(crbs + "/" + name); code != http.StatusNotFound {
			t.Errorf("refused cluster binding %s was stored: GET %d", name, code)
		}
	}
}

// waitCan waits until c's user may verb resource (of the RBAC group) name
// in ns, as a SelfSubjectAccessReview says: a new binding reaches the
// authorizer through its watch.
func waitCan(t *testing.T, c *caller, ns, verb, resource, name string) {
	t.Helper()
	review := mustJSON(map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
		"spec": map[string]any{"resourceAttributes": map[string]string{"namespace": ns, "verb": verb, "group": api.RBACGroup,
			"resource": resource, "name": name}}})
	waitFor(t, c.token+" may "+verb+" "+resource, 10*time.Second, func() bool {
		code, data := c.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
		return code == http.StatusCreated && strings.Contains(string(data), `"allowed":true`)
	})
}
