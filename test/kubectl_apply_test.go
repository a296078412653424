package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minik8s/test/framework"
)

// TestKubectlServerSideApply: `kubectl apply --server-side` of yaml/'s
// kinds (the function kinds too) creates them and applies again unchanged;
// another manager's change of a field kubectl owns is a conflict naming
// both, taken with --force-conflicts; an object applied client-side moves
// to server-side apply with its last-applied annotation kept in step; and
// kubectl diff shows a change before it is made.
func TestKubectlServerSideApply(t *testing.T) {
	s := framework.StartAPIServer(t)
	run := func(want string, args ...string) string { t.Helper(); return mustKubectl(t, s, want, args...) }
	var files []string
	for _, f := range []string{"configmap", "deployment", "service", "func-demo"} {
		files = append(files, "-f", filepath.Join(examplesDir, f+".yaml"))
	}
	apply := append([]string{"apply", "--server-side"}, files...)
	run("deployment.apps/hello serverside-applied", apply...)
	run("func.minik8s.io/classify serverside-applied", apply...)
	run("manager: kubectl", "get", "cm", "app-config", "-o", "yaml", "--show-managed-fields")

	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cm := func(greeting string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\n  namespace: default\ndata:\n  greeting: " + greeting + "\n"
	}
	other := write("other.yaml", cm("hi from another manager"))
	out, errOut, err := kubectl(t, s, "apply", "--server-side", "--field-manager=ops", "-f", other)
	if err == nil || !strings.Contains(errOut, `conflict with "kubectl"`) || !strings.Contains(errOut, ".data.greeting") {
		t.Fatalf("another manager's apply of kubectl's field: %v\n%s%s", err, out, errOut)
	}
	run("hello from minik8s", "get", "cm", "app-config", "-o", "jsonpath={.data.greeting}")
	run("configmap/app-config serverside-applied", "apply", "--server-side", "--field-manager=ops", "--force-conflicts", "-f", other)
	run("hi from another manager", "get", "cm", "app-config", "-o", "jsonpath={.data.greeting}")

	// Client-side apply, then server-side: kubectl moves the fields to its
	// server-side manager, and the last-applied annotation follows.
	csa := write("csa.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moved\ndata:\n  a: \"1\"\n")
	run("configmap/moved created", "apply", "-f", csa)
	changed := write("csa2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moved\ndata:\n  a: \"2\"\n")
	diff, errOut, err := kubectl(t, s, "diff", "-f", changed)
	if err == nil || !strings.Contains(diff, `+  a: "2"`) {
		t.Errorf("kubectl diff of a change: %v\n%s%s", err, diff, errOut)
	}
	diff, errOut, err = kubectl(t, s, "diff", "--server-side", "-f", changed)
	if err == nil || !strings.Contains(diff, `+  a: "2"`) {
		t.Errorf("kubectl diff --server-side of a change: %v\n%s%s", err, diff, errOut)
	}
	run("configmap/moved serverside-applied", "apply", "--server-side", "-f", changed)
	run(`"a":"2"`, "get", "cm", "moved", "-o", `jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}`)
	if out, errOut, err := kubectl(t, s, "diff", "--server-side", "-f", changed); err != nil || out != "" {
		t.Errorf("kubectl diff of what is applied: %v\n%s%s", err, out, errOut)
	}

	// kubectl's --validate modes, as against Kubernetes: a field no kind
	// has is refused (strict, the default), warned of or ignored; a field
	// of Kubernetes' kind that minik8s does not serve is refused whatever
	// the mode, named.
	bad := write("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ncolour: blue\n")
	if out, errOut, err := kubectl(t, s, "create", "-f", bad); err == nil || !strings.Contains(errOut, `unknown field "colour"`) {
		t.Errorf("kubectl create of an unknown field: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = kubectl(t, s, "create", "--validate=warn", "-f", bad)
	if err != nil || !strings.Contains(errOut, `Warning: unknown field "colour"`) {
		t.Errorf("kubectl create --validate=warn: %v\n%s%s", err, out, errOut)
	}
	ignored := write("bad2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad2\ncolour: blue\n")
	out, errOut, err = kubectl(t, s, "apply", "--validate=false", "-f", ignored)
	if err != nil || strings.Contains(errOut, "Warning") {
		t.Errorf("kubectl apply --validate=false: %v\n%s%s", err, out, errOut)
	}
	nfs := write("nfs.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: nfs\nspec:\n  volumes:\n  - {name: v, nfs: {server: s, path: /}}\n  containers:\n  - {name: c, image: i}\n")
	for _, validate := range []string{"--validate=strict", "--validate=warn", "--validate=false"} {
		if out, errOut, err := kubectl(t, s, "apply", validate, "-f", nfs); err == nil || !strings.Contains(errOut, "spec.volumes[0].nfs") {
			t.Errorf("kubectl apply %s of a field minik8s does not serve: %v\n%s%s", validate, err, out, errOut)
		}
	}
}
