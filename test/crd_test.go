package test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// TestCustomResourceDefinitionsWithKubectl: the CronTab of Kubernetes'
// CRD walkthrough with the stock kubectl: the definition applied and
// established, its kind in discovery; a CronTab created (its unknown
// field refused by kubectl's strict field validation, pruned without it,
// its default filled), one against the schema refused with 422, kubectl
// explain reading the schema from OpenAPI, kubectl get showing the
// printer columns, kubectl get -w seeing a change, the status subresource
// apart from the spec; and deleting the definition takes its objects, its
// routes and its OpenAPI.
func TestCustomResourceDefinitionsWithKubectl(t *testing.T) {
	s := framework.StartAPIServer(t)
	dir := filepath.Join(moduleRoot(t), "test", "testdata", "crd")
	mustKubectl(t, s, "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created",
		"apply", "-f", filepath.Join(dir, "crontab-crd.yaml"))
	mustKubectl(t, s, "condition met", "wait", "--for=condition=Established", "--timeout=30s", "crd/crontabs.stable.example.com")
	mustKubectl(t, s, "stable.example.com/v1", "api-resources", "--api-group=stable.example.com")

	// kubectl explain reads the kind from OpenAPI v3, built from the
	// definition's schema.
	explainSpec := func() (bool, string) {
		out, errOut, err := kubectl(t, s, "explain", "crontab.spec")
		ok := err == nil && strings.Contains(out, "KIND:       CronTab") && strings.Contains(out, "The schedule and what it runs") &&
			strings.Contains(out, "cronSpec\t<string>") && strings.Contains(out, "When to run, in cron's format.")
		return ok, out + errOut
	}
	eventually(t, 30*time.Second, "kubectl explain crontab.spec", explainSpec)
	mustKubectl(t, s, "When to run, in cron's format.", "explain", "crontabs.spec.cronSpec")
	// And from OpenAPI v2, as older kubectls read it.
	mustKubectl(t, s, "When to run, in cron's format.", "explain", "crontabs.spec.cronSpec", "--output=plaintext-openapiv2")
	// An unknown field is refused under kubectl's default
	// --validate=strict (the OpenAPI document says the server validates
	// fields), as Kubernetes refuses it; under --validate=false it is
	// pruned.
	for _, args := range [][]string{{"apply"}, {"apply", "--server-side"}} {
		out, errOut, err := kubectl(t, s, append(args, "-f", filepath.Join(dir, "crontab.yaml"))...)
		if err == nil || !strings.Contains(errOut, `strict decoding error: unknown field "spec.unknownField"`) {
			t.Errorf("kubectl %s of a CronTab with an unknown field: %v, want it refused\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
	}
	mustKubectl(t, s, "crontab.stable.example.com/my-new-cron-object created", "apply", "--validate=false", "-f", filepath.Join(dir, "crontab.yaml"))
	spec := mustKubectl(t, s, "", "get", "ct", "my-new-cron-object", "-o", "jsonpath={.spec}")
	if strings.Contains(spec, "unknownField") || !strings.Contains(spec, `"replicas":1`) {
		t.Errorf("spec %s: want unknownField pruned and replicas defaulted to 1", spec)
	}
	out, errOut, err := kubectl(t, s, "apply", "-f", filepath.Join(dir, "crontab-invalid.yaml"))
	if err == nil || !strings.Contains(errOut, "is invalid") || !strings.Contains(errOut, "spec.replicas") || !strings.Contains(errOut, "spec.cronSpec") {
		t.Errorf("kubectl apply of an invalid CronTab: %v, want the schema's 422\n%s%s", err, out, errOut)
	}
	table := mustKubectl(t, s, "SPEC", "get", "crontabs")
	for _, want := range []string{"NAME", "REPLICAS", "AGE", "my-new-cron-object", "* * * * */5"} {
		if !strings.Contains(table, want) {
			t.Errorf("kubectl get crontabs lacks %q:\n%s", want, table)
		}
	}

	// Server-side apply, as Helm 4 writes.
	mustKubectl(t, s, "serverside-applied", "apply", "--server-side", "--validate=false", "--field-manager=tester", "-f", filepath.Join(dir, "crontab.yaml"))
	if got := mustKubectl(t, s, "", "get", "ct", "my-new-cron-object", "-o", "jsonpath={.metadata.managedFields[*].manager}"); !strings.Contains(got, "tester") {
		t.Errorf("managedFields managers %q, want tester's", got)
	}

	// A watch sees the change.
	bin, _ := exec.LookPath("kubectl")
	watch := exec.Command(bin, "--server", s.URL, "get", "crontabs", "-w", "--output-watch-events")
	watch.Env = append(watch.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=none")
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine := func(want string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("kubectl get -w ended before %q", want)
				}
				if strings.Contains(l, want) {
					return
				}
			case <-deadline:
				t.Fatalf("kubectl get -w: no line with %q", want)
			}
		}
	}
	waitLine("ADDED")
	mustKubectl(t, s, "patched", "patch", "ct", "my-new-cron-object", "--type=merge", "-p", `{"spec":{"replicas":3}}`)
	waitLine("MODIFIED")

	// The status is written through its subresource only.
	mustKubectl(t, s, "patched", "patch", "ct", "my-new-cron-object", "--subresource=status", "--type=merge", "-p", `{"status":{"seen":true}}`)
	mustKubectl(t, s, "patched", "patch", "ct", "my-new-cron-object", "--type=merge", "-p", `{"status":{"seen":false}}`)
	if got := mustKubectl(t, s, "", "get", "ct", "my-new-cron-object", "-o", "jsonpath={.status.seen}"); got != "true" {
		t.Errorf("status.seen %q after a patch of the object, want true (the status subresource's)", got)
	}

	// Helm 4 installs a chart with the definition in crds/ and an object
	// of its kind in templates/ (the definition is there already: Helm
	// leaves it as it is).
	helmInstall(t, s)

	// kubectl caches OpenAPI on disk (~/.kube/cache): a changed definition
	// changes the document's hash in the index, so kubectl reads it anew.
	home := t.TempDir()
	if out, errOut, err := kubectlHome(s, home, "explain", "crontab.spec.image"); err != nil || !strings.Contains(out, "The image the job runs.") {
		t.Fatalf("kubectl explain crontab.spec.image: %v\n%s%s", err, out, errOut)
	}
	mustKubectl(t, s, "patched", "patch", "crd", "crontabs.stable.example.com", "--type=json", "-p",
		`[{"op":"replace","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/image/description","value":"The image, described anew."}]`)
	eventually(t, 30*time.Second, "kubectl explain with its cache sees the new description", func() (bool, string) {
		out, errOut, err := kubectlHome(s, home, "explain", "crontab.spec.image")
		return err == nil && strings.Contains(out, "The image, described anew."), out + errOut
	})

	// Deleting the definition removes its objects and its routes.
	mustKubectl(t, s, "deleted", "delete", "crd", "crontabs.stable.example.com", "--timeout=60s")
	eventually(t, 30*time.Second, "the CronTab kind is gone", func() (bool, string) {
		out, errOut, err := kubectl(t, s, "get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs")
		return err != nil && strings.Contains(errOut, "NotFound"), out + errOut
	})
	// And its OpenAPI: kubectl explain no longer knows it.
	eventually(t, 30*time.Second, "the CronTab kind is gone from OpenAPI", func() (bool, string) {
		index, _, _ := kubectl(t, s, "get", "--raw", "/openapi/v3")
		out, errOut, err := kubectl(t, s, "explain", "crontabs")
		return err != nil && strings.Contains(index, `"api/v1"`) && !strings.Contains(index, "stable.example.com"), index + out + errOut
	})
	// Defined again, the kind has no object of before.
	mustKubectl(t, s, "created", "apply", "-f", filepath.Join(dir, "crontab-crd.yaml"))
	mustKubectl(t, s, "condition met", "wait", "--for=condition=Established", "--timeout=30s", "crd/crontabs.stable.example.com")
	eventually(t, 30*time.Second, "kubectl explain crontab.spec, the kind defined again", explainSpec)
	if out, errOut, err := kubectl(t, s, "get", "crontabs"); err != nil || !strings.Contains(out+errOut, "No resources found") {
		t.Errorf("kubectl get crontabs after the definition came back: %v\n%s%s", err, out, errOut)
	}
}

// TestCustomResourcesAttackerEdit: an editor (the edit ClusterRole in a
// namespace, as Kubernetes' aggregate roles give nothing for custom
// resources) may not define a kind (403), nor read or write the objects
// of one defined by the admin, until a role names them.
func TestCustomResourcesAttackerEdit(t *testing.T) {
	s := framework.StartSecureAPIServer(t, secureTokens)
	rbacObject(t, s, "/namespaces/default/rolebindings", binding("RoleBinding", "default", "team-a-edit", "ClusterRole", "edit",
		api.Subject{Kind: api.GroupKind, APIGroup: api.RBACGroup, Name: "team-a"}))
	editor := newCaller(t, s, "editor-token")
	waitAllowed(t, editor, "GET", "/api/v1/namespaces/default/configmaps")
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},` +
		`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	editor.expect("POST", crds, crd, http.StatusForbidden, "forbidden")
	editor.expect("GET", crds, "", http.StatusForbidden, "forbidden")
	if code, data := httpDo(t, "POST", s.URL+crds, "application/json", []byte(crd)); code != http.StatusCreated {
		t.Fatalf("the admin creating the CRD: %d %s", code, data)
	}
	widgets := "/apis/example.com/v1/namespaces/default/widgets"
	widget := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`
	eventually(t, 30*time.Second, "widgets served", func() (bool, string) {
		code, data := httpDo(t, "POST", s.URL+widgets, "application/json", []byte(widget))
		return code == http.StatusCreated, string(data)
	})
	editor.expect("GET", widgets, "", http.StatusForbidden, "forbidden")
	editor.expect("GET", widgets+"/w", "", http.StatusForbidden, "forbidden")
	editor.expect("POST", widgets, strings.Replace(widget, `"w"`, `"w2"`, 1), http.StatusForbidden, "forbidden")
	editor.expect("DELETE", widgets+"/w", "", http.StatusForbidden, "forbidden")
	editor.expect("DELETE", crds+"/widgets.example.com", "", http.StatusForbidden, "forbidden")
	// A role naming them gives them.
	role := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"widgets","namespace":"default"},` +
		`"rules":[{"apiGroups":["example.com"],"resources":["widgets"],"verbs":["get","list"]}]}`
	if code, data := httpDo(t, "POST", s.URL+"/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", "application/json", []byte(role)); code != http.StatusCreated {
		t.Fatalf("role: %d %s", code, data)
	}
	rbacObject(t, s, "/namespaces/default/rolebindings", binding("RoleBinding", "default", "team-a-widgets", "Role", "widgets",
		api.Subject{Kind: api.GroupKind, APIGroup: api.RBACGroup, Name: "team-a"}))
	waitAllowed(t, editor, "GET", widgets)
	editor.expect("GET", widgets+"/w", "", http.StatusOK, `"size":1`)
	editor.expect("DELETE", widgets+"/w", "", http.StatusForbidden, "forbidden")
}

// kubectlHome runs kubectl with home as its HOME, kept between calls (and
// so its cache).
func kubectlHome(s *framework.APIServer, home string, args ...string) (string, string, error) {
	cmd := exec.Command("kubectl", append([]string{"--server", s.URL}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// helmInstall installs test/testdata/charts/crontab with the real Helm 4.
func helmInstall(t *testing.T, s *framework.APIServer) {
	t.Helper()
	bin, err := exec.LookPath("helm")
	if err != nil {
		t.Logf("helm is not installed: the chart is not tried (%v)", err)
		return
	}
	home := t.TempDir()
	kubeconfig := filepath.Join(home, "kubeconfig")
	conf := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + s.URL + "}\n" +
		"users:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: default}\ncurrent-context: c\n"
	if err := os.WriteFile(kubeconfig, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "install", "crons", filepath.Join(moduleRoot(t), "test", "testdata", "charts", "crontab"), "--wait", "--timeout=60s")
	cmd.Env = append(cmd.Environ(), "HOME="+home, "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "STATUS: deployed") {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	if got := mustKubectl(t, s, "", "get", "ct", "crons-cron", "-o", "jsonpath={.spec.replicas}"); got != "2" {
		t.Errorf("the chart's CronTab has replicas %q, want 2", got)
	}
}

// TestNamespaceDeletionRemovesCustomObjects: deleting a namespace
// deletes the objects of namespaced custom kinds in it, as it does the
// built-in ones, and leaves those of other namespaces.
func TestNamespaceDeletionRemovesCustomObjects(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartControllers(t, s, controller.Config{})
	post := func(path, body string) {
		t.Helper()
		if code, data := httpDo(t, "POST", s.URL+path, "application/json", []byte(body)); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", path, code, data)
		}
	}
	post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",`+
		`"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},`+
		`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`)
	post("/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`)
	widget := func(ns string) string { return "/apis/example.com/v1/namespaces/" + ns + "/widgets" }
	eventually(t, 30*time.Second, "widgets served", func() (bool, string) {
		code, data := httpDo(t, "POST", s.URL+widget("team"), "application/json",
			[]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`))
		return code == http.StatusCreated, string(data)
	})
	post(widget("default"), `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"keep"}}`)

	if code, data := httpDo(t, "DELETE", s.URL+"/api/v1/namespaces/team", "", nil); code != http.StatusOK {
		t.Fatalf("deleting team: %d %s", code, data)
	}
	eventually(t, 30*time.Second, "the namespace team gone", func() (bool, string) {
		code, data := httpDo(t, "GET", s.URL+"/api/v1/namespaces/team", "", nil)
		return code == http.StatusNotFound, string(data)
	})
	if code, data := httpDo(t, "GET", s.URL+widget("team")+"/w", "", nil); code != http.StatusNotFound {
		t.Errorf("the widget of the deleted namespace: %d %s", code, data)
	}
	if code, data := httpDo(t, "GET", s.URL+widget("default")+"/keep", "", nil); code != http.StatusOK {
		t.Errorf("the widget of default: %d %s", code, data)
	}
}
