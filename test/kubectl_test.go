package test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/test/framework"
	"minik8s/test/harness"
)

// kubectl runs the real kubectl against s's local port, with a private
// HOME (its discovery cache) so that runs do not share what they learnt.
func kubectl(t *testing.T, s *framework.APIServer, args ...string) (string, string, error) {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		harness.NeedE2E(t, "kubectl is not installed: %v", err)
	}
	cmd := exec.Command(bin, append([]string{"--server", s.URL}, args...)...)
	home := filepath.Join(t.TempDir(), "home")
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// mustKubectl runs kubectl and fails the test unless it succeeds and
// prints want.
func mustKubectl(t *testing.T, s *framework.APIServer, want string, args ...string) string {
	t.Helper()
	out, errOut, err := kubectl(t, s, args...)
	if err != nil || !strings.Contains(out, want) {
		t.Fatalf("kubectl %s: %v, want %q in\n%s%s", strings.Join(args, " "), err, want, out, errOut)
	}
	return out
}

// TestKubectlDiscoveryAndErrors: the real kubectl finds every kind through
// discovery (api-resources, with short names and groups), reads the
// server's version, creates a ConfigMap (a protobuf body, as kubectl sends
// Kubernetes' own kinds) and prints the server's errors as it does for
// Kubernetes.
func TestKubectlDiscoveryAndErrors(t *testing.T) {
	s := framework.StartAPIServer(t)
	out, errOut, err := kubectl(t, s, "api-resources")
	if err != nil {
		t.Fatalf("kubectl api-resources: %v\n%s%s", err, out, errOut)
	}
	for _, want := range []string{"pods  ", " po ", "replicasets", " rs ", "apps/v1", "funcs", " fn,", "configmaps", " cm ", "rbac.authorization.k8s.io/v1", "coordination.k8s.io/v1"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl api-resources lacks %q:\n%s", want, out)
		}
	}
	// OpenAPI v2 too (protobuf, as kubectl and client-go ask for it).
	if out, errOut, err := kubectl(t, s, "explain", "pod.spec.containers", "--output=plaintext-openapiv2"); err != nil || !strings.Contains(out, "imagePullPolicy\t<string>") {
		t.Errorf("kubectl explain --output=plaintext-openapiv2: %v\n%s%s", err, out, errOut)
	}
	if out, errOut, err := kubectl(t, s, "version"); err != nil || !strings.Contains(out, "Server Version: v1.32") {
		t.Errorf("kubectl version: %v\n%s%s", err, out, errOut)
	}
	if out, errOut, err := kubectl(t, s, "create", "configmap", "settings", "--from-literal=color=blue"); err != nil || !strings.Contains(out, "configmap/settings created") {
		t.Fatalf("kubectl create configmap: %v\n%s%s", err, out, errOut)
	}
	if out, errOut, err := kubectl(t, s, "get", "cm", "settings", "-o", "jsonpath={.data.color}"); err != nil || out != "blue" {
		t.Errorf("kubectl get cm settings: %v %q %s", err, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pod", "nope"}, `Error from server (NotFound): pods "nope" not found`},
		{[]string{"create", "configmap", "settings"}, `configmaps "settings" already exists`},
	} {
		out, errOut, err := kubectl(t, s, tc.args...)
		if err == nil || !strings.Contains(errOut, tc.want) {
			t.Errorf("kubectl %s: %v, want the error %q\n%s%s", strings.Join(tc.args, " "), err, tc.want, out, errOut)
		}
	}
}

// TestKubectlApplyAndPatch: `kubectl apply` of yaml/'s Kubernetes kinds
// creates them, then finds them unchanged, then configures a changed one
// (client-side apply: strategic merge patches against the
// last-applied-configuration); label, annotate, patch of every type, scale
// (a patch of the scale subresource) and set image work as on Kubernetes.
func TestKubectlApplyAndPatch(t *testing.T) {
	s := framework.StartAPIServer(t)
	run := func(want string, args ...string) string { t.Helper(); return mustKubectl(t, s, want, args...) }
	var files []string
	for _, f := range []string{"configmap", "endpoints", "node", "pod", "replicaset", "service"} {
		files = append(files, "-f", filepath.Join(examplesDir, f+".yaml"))
	}
	// Validated as kubectl validates: OpenAPI says the server checks
	// fields (fieldValidation), and it does.
	apply := append([]string{"apply"}, files...)
	run("replicaset.apps/web created", apply...)
	out := run("replicaset.apps/web unchanged", apply...)
	if strings.Contains(out, "configured") || strings.Contains(out, "created") {
		t.Errorf("second apply changed something:\n%s", out)
	}
	changed := filepath.Join(t.TempDir(), "configmap.yaml")
	data, err := os.ReadFile(filepath.Join(examplesDir, "configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(changed, append(data, []byte("  extra: \"1\"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	run("configmap/app-config configured", "apply", "-f", changed)
	run("1", "get", "cm", "app-config", "-o", "jsonpath={.data.extra}")

	run("pod/http-server labeled", "label", "pod", "http-server", "tier=front")
	run("pod/http-server annotated", "annotate", "pod", "http-server", "owner=course")
	run("front course", "get", "pod", "http-server", "-o", `jsonpath={.metadata.labels.tier} {.metadata.annotations.owner}`)
	run("configmap/app-config patched", "patch", "cm", "app-config", "--type", "merge", "-p", `{"data":{"m":"merge"}}`)
	run("configmap/app-config patched", "patch", "cm", "app-config", "--type", "json", "-p", `[{"op":"add","path":"/data/j","value":"json"}]`)
	run("merge json", "get", "cm", "app-config", "-o", "jsonpath={.data.m} {.data.j}")
	// Strategic: containers merge by name, so the image changes and the
	// command stays.
	run("pod/http-server patched", "patch", "pod", "http-server", "-p", `{"spec":{"containers":[{"name":"server","image":"minik8s/python-runtime:v2"}]}}`)
	run("minik8s/python-runtime:v2 python3", "get", "pod", "http-server", "-o", "jsonpath={.spec.containers[0].image} {.spec.containers[0].command[0]}")
	run("pod/http-server image updated", "set", "image", "pod/http-server", "server=minik8s/python-runtime:v3")
	run("replicaset.apps/web scaled", "scale", "rs", "web", "--replicas=5")
	run("5", "get", "rs", "web", "-o", "jsonpath={.spec.replicas}")

	// A field no kind has is refused, named.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ncolour: blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := kubectl(t, s, "apply", "-f", bad); err == nil || !strings.Contains(errOut, `unknown field "colour"`) {
		t.Errorf("kubectl apply of an unknown field: %v\n%s%s", err, out, errOut)
	}
	// kubectl explain reads the kinds' schemas from OpenAPI v3.
	for _, tc := range []struct{ path, want string }{
		{"pod.spec.containers", "imagePullPolicy\t<string>"},
		{"rs.spec", "replicas\t<integer>"},
		{"svc.spec.ports", "targetPort\t<IntOrString>"},
		// A field stored and not acted on says so.
		{"pod.spec.imagePullSecrets", "minik8s stores this field and does not act on it"},
		{"pod.spec.containers.lifecycle.preStop.httpGet", "httpHeaders\t<[]HTTPHeader>"},
	} {
		run(tc.want, "explain", tc.path)
	}

	// kubectl get prints the server's Tables: the columns mkctl prints.
	run("READY   STATUS    RESTARTS   AGE   IP       NODE", "get", "pods", "-o", "wide")
	run("DESIRED   CURRENT   READY   AGE   CONTAINERS   IMAGES", "get", "rs", "-o", "wide")
	out = run("TYPE        CLUSTER-IP", "get", "nodes,svc,cm")
	for _, want := range []string{"node/example-node", "Unknown,SchedulingDisabled", "service/web", "NodePort", "configmap/app-config"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get nodes,svc,cm lacks %q:\n%s", want, out)
		}
	}
	run("NAMESPACE   NAME          READY", "get", "pods", "-A")

	// kubectl get -w: the table, then a row per change.
	bin, _ := exec.LookPath("kubectl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	watch := exec.CommandContext(ctx, bin, "--server", s.URL, "get", "pods", "-w")
	watch.Env = append(os.Environ(), "HOME="+t.TempDir())
	var watched syncBuffer
	watch.Stdout, watch.Stderr = &watched, &watched
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "kubectl get pods -w printing the table", func() bool { return strings.Contains(watched.String(), "http-server") })
	run("pod/http-server labeled", "label", "pod", "http-server", "watched=yes")
	waitUntil(t, 30*time.Second, "kubectl get pods -w printing the change", func() bool { return strings.Count(watched.String(), "http-server") >= 2 })
	cancel()
	_ = watch.Wait()
	if got := watched.String(); !strings.HasPrefix(got, "NAME") || strings.Count(got, "NAME") != 1 {
		t.Errorf("kubectl get pods -w printed:\n%s", got)
	}

	// Server dry runs check everything and write nothing.
	run("configmap/dry created (server dry run)", "create", "configmap", "dry", "--from-literal=a=b", "--dry-run=server")
	if out, errOut, err := kubectl(t, s, "get", "cm", "dry"); err == nil || !strings.Contains(errOut, "NotFound") {
		t.Errorf("a dry-run create was written: %v\n%s%s", err, out, errOut)
	}
	run("(server dry run)", "delete", "cm", "app-config", "--dry-run=server")
	run("configmap/app-config patched", "patch", "cm", "app-config", "--type", "merge", "-p", `{"data":{"m":"dry"}}`, "--dry-run=server")
	run("(server dry run)", "scale", "rs", "web", "--replicas=1", "--dry-run=server")
	run("merge 5", "get", "cm,rs", "-o", `jsonpath={.items[0].data.m} {.items[1].spec.replicas}`)
	run("service/dry created (server dry run)", "create", "service", "nodeport", "dry", "--tcp=80:8080", "--dry-run=server")
	run("web", "get", "svc")
	if out := run("web", "get", "svc", "-o", "name"); strings.Contains(out, "dry") {
		t.Errorf("a dry-run service was written:\n%s", out)
	}

	// A patch the object refuses is refused whole, with the field named.
	out, errOut, err := kubectl(t, s, "patch", "rs", "web", "--type", "merge", "-p", `{"spec":{"replicas":-1}}`)
	if err == nil || !strings.Contains(errOut, "spec.replicas") {
		t.Errorf("a negative replica count by patch: %v\n%s%s", err, out, errOut)
	}
	run("5", "get", "rs", "web", "-o", "jsonpath={.spec.replicas}")

	// kubectl delete --cascade=orphan keeps the dependents, freed of the
	// owner.
	rs, err := s.Client.ReplicaSets("default").Get(context.Background(), "web")
	if err != nil {
		t.Fatal(err)
	}
	dep := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "web-kept", OwnerReferences: []api.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: rs.UID}}},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := s.Client.Pods("default").Create(context.Background(), dep); err != nil {
		t.Fatal(err)
	}
	run(`replicaset.apps "web" deleted`, "delete", "rs", "web", "--cascade=orphan")
	if p, err := s.Client.Pods("default").Get(context.Background(), "web-kept"); err != nil || len(p.OwnerReferences) != 0 {
		t.Errorf("the orphaned pod: %v, owners %v", err, p)
	}
}

// TestKubectlFuncKinds: kubectl applies yaml/ whole, functions and
// triggers included (the minik8s.io/v1 view: mode in the spec, source as
// text), then finds it unchanged; the same objects read through /api/v1
// keep the reference form; a change of mode is a change of the stored
// apiVersion; delete -f yaml/ removes everything.
func TestKubectlFuncKinds(t *testing.T) {
	s := framework.StartAPIServer(t)
	run := func(want string, args ...string) string { t.Helper(); return mustKubectl(t, s, want, args...) }
	out := run("func.minik8s.io/classify created", "apply", "-f", examplesDir)
	for _, want := range []string{"func.minik8s.io/halve created", "func.minik8s.io/perl_shout created", "trigger.minik8s.io/classify-web created", "app.minik8s.io/", "replicaset.apps/web created"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply -f yaml/ lacks %q:\n%s", want, out)
		}
	}
	out = run("func.minik8s.io/classify unchanged", "apply", "-f", examplesDir)
	if strings.Contains(out, "configured") || strings.Contains(out, "created") {
		t.Errorf("the second apply of yaml/ changed something:\n%s", out)
	}
	run("classify", "get", "funcs")
	run("pool def run(arg):", "get", "fn", "classify", "-o", "jsonpath={.spec.mode} {.spec.function}")
	run("minik8s.io/v1", "get", "triggers", "classify-web", "-o", "jsonpath={.apiVersion}")
	run("mode\t<string>", "explain", "funcs.spec")

	// The alias path and the reference routes keep the reference form.
	var ref api.Func
	getJSON(t, s.URL+"/api/v1/namespaces/default/funcs/classify", &ref)
	if ref.APIVersion != api.FuncAPIVersionV2 || ref.Spec.Mode != "" || ref.Spec.Name != "classify" || strings.Contains(ref.Spec.Function, "def run") {
		t.Errorf("the reference form of classify: apiVersion %q, mode %q, name %q, function %.20q", ref.APIVersion, ref.Spec.Mode, ref.Spec.Name, ref.Spec.Function)
	}

	// The mode is the stored apiVersion; a wrong one is refused, named.
	run("func.minik8s.io/double patched", "patch", "fn", "double", "--type", "merge", "-p", `{"spec":{"mode":"fresh"}}`)
	getJSON(t, s.URL+"/api/v1/namespaces/default/funcs/double", &ref)
	if ref.APIVersion != api.FuncAPIVersionV1 {
		t.Errorf("double in mode fresh is stored with apiVersion %q, want v1", ref.APIVersion)
	}
	if out, errOut, err := kubectl(t, s, "patch", "fn", "double", "--type", "merge", "-p", `{"spec":{"mode":"warm"}}`); err == nil || !strings.Contains(errOut, "spec.mode") {
		t.Errorf("an unknown mode: %v\n%s%s", err, out, errOut)
	}

	run(`func.minik8s.io "classify" deleted`, "delete", "-f", examplesDir)
	if out, errOut, err := kubectl(t, s, "get", "funcs,triggers,apps.minik8s.io,pods,rs", "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("after delete -f yaml/: %v\n%s%s", err, out, errOut)
	}
}

// getJSON reads url's JSON body into out.
func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	code, body := httpGet(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestKubectlDeleteForeground: `kubectl delete --cascade=foreground` keeps
// the ReplicaSet (deletionTimestamp set, the foregroundDeletion finalizer)
// while its pods are there, one of them held by a finalizer of the user's;
// when that is removed the pod goes, then the ReplicaSet, and kubectl,
// which waited, returns.
func TestKubectlDeleteForeground(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartControllers(t, s, controller.Config{Controllers: []string{"replicaset", "garbagecollector"}})
	run := func(want string, args ...string) string { t.Helper(); return mustKubectl(t, s, want, args...) }
	run("replicaset.apps/web created", "apply", "-f", filepath.Join(examplesDir, "replicaset.yaml"))
	ctx := context.Background()
	var held string
	waitUntil(t, 10*time.Second, "the ReplicaSet's pods", func() bool {
		pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{})
		if err != nil || len(pods) == 0 {
			return false
		}
		held = pods[0].Name
		return true
	})
	run("pod/"+held+" patched", "patch", "pod", held, "--type", "merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)

	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	bin, _ := exec.LookPath("kubectl")
	del := exec.CommandContext(kctx, bin, "--server", s.URL, "delete", "rs", "web", "--cascade=foreground")
	del.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out syncBuffer
	del.Stdout, del.Stderr = &out, &out
	if err := del.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the ReplicaSet marked, its held pod left alone", func() bool {
		rs, err := s.Client.ReplicaSets("default").Get(ctx, "web")
		if err != nil || rs.DeletionTimestamp == nil || !slices.Contains(rs.Finalizers, api.FinalizerForeground) {
			return false
		}
		pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{})
		return err == nil && len(pods) == 1 && pods[0].Name == held && pods[0].DeletionTimestamp != nil
	})
	// A finalizer cannot be added to what is being deleted.
	if o, errOut, err := kubectl(t, s, "patch", "rs", "web", "--type", "merge", "-p", `{"metadata":{"finalizers":["foregroundDeletion","example.com/more"]}}`); err == nil || !strings.Contains(errOut, "metadata.finalizers") {
		t.Errorf("adding a finalizer to a ReplicaSet being deleted: %v\n%s%s", err, o, errOut)
	}
	run("pod/"+held+" patched", "patch", "pod", held, "--type", "json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	if err := del.Wait(); err != nil || !strings.Contains(out.String(), `replicaset.apps "web" deleted`) {
		t.Fatalf("kubectl delete --cascade=foreground: %v\n%s", err, out.String())
	}
	if _, err := s.Client.ReplicaSets("default").Get(ctx, "web"); !errdefs.IsNotFound(err) {
		t.Errorf("the ReplicaSet after kubectl returned: %v", err)
	}
	if pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{}); err != nil || len(pods) != 0 {
		t.Errorf("pods left: %d (%v)", len(pods), err)
	}
}

// TestKubectlGenerateName: kubectl create of a manifest with
// metadata.generateName (as Jobs in tutorials and Helm hooks have it)
// makes a new object each time, named from the prefix; a prefix that
// cannot start a name is refused naming the field.
func TestKubectlGenerateName(t *testing.T) {
	s := framework.StartAPIServer(t)
	manifest := func(prefix string) string {
		f := filepath.Join(t.TempDir(), "cm.yaml")
		body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: " + prefix + "\ndata:\n  k: v\n"
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := manifest("report-")
	first := mustKubectl(t, s, "created", "create", "-f", f)
	second := mustKubectl(t, s, "created", "create", "-f", f)
	if first == second || !strings.HasPrefix(first, "configmap/report-") || !strings.HasPrefix(second, "configmap/report-") {
		t.Errorf("two creates printed %q and %q, want two configmap/report-XXXXX", first, second)
	}
	out := mustKubectl(t, s, "report-", "get", "configmaps", "-o", "name")
	if n := strings.Count(out, "configmap/report-"); n != 2 {
		t.Errorf("%d ConfigMaps named report-*, want 2:\n%s", n, out)
	}
	_, errOut, err := kubectl(t, s, "create", "-f", manifest("Bad_Prefix-"))
	if err == nil || !strings.Contains(errOut, "metadata.generateName") {
		t.Errorf("an invalid prefix: %v, want an error naming metadata.generateName:\n%s", err, errOut)
	}
}
