package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubectlAsAUser types, with the real kubectl, the everyday commands of
// a Kubernetes tutorial against a running cluster, in a namespace of its
// own: create of each kind kubectl makes, expose, set env, rollout
// restart and status, scale, autoscale, wait, logs, a get -o yaml fed
// back to replace and diff, explain. Each must answer as Kubernetes does.
// image is a runtime image the cluster's nodes have.
func kubectlAsAUser(t *testing.T, kubectl func(args ...string) (string, string, error), image string) {
	t.Helper()
	run := func(want string, args ...string) string {
		t.Helper()
		out, errOut, err := kubectl(args...)
		if err != nil || !strings.Contains(out, want) {
			state, _, _ := kubectl("-n", "lab", "get", "pods,rs,deploy", "-o", "wide")
			t.Logf("the namespace lab:\n%s", state)
			state, _, _ = kubectl("-n", "lab", "get", "pods", "-o", "yaml")
			t.Logf("the namespace lab:\n%s", state)
			t.Fatalf("kubectl %s: %v, want %q in\n%s%s", strings.Join(args, " "), err, want, out, errOut)
		}
		return out
	}
	lab := func(want string, args ...string) string {
		t.Helper()
		return run(want, append([]string{"-n", "lab"}, args...)...)
	}
	run("namespace/lab created", "create", "namespace", "lab")
	lab("serviceaccount/robot created", "create", "serviceaccount", "robot")
	lab("configmap/cfg created", "create", "configmap", "cfg", "--from-literal=color=blue")
	lab("secret/pw created", "create", "secret", "generic", "pw", "--from-literal=password=s3cret")
	// No port of its own: the pods of a test's kubelet share its node's
	// network, where a rolling update's two pods could not both bind one.
	lab("deployment.apps/web created", "create", "deployment", "web", "--image="+image, "--", "python3", "-c", "import time; time.sleep(3600)")
	lab("condition met", "wait", "--for=condition=Available", "deployment/web", "--timeout=180s")
	lab("condition met", "wait", "--for=condition=Ready", "pod", "-l", "app=web", "--timeout=180s")
	lab("service/web exposed", "expose", "deployment", "web", "--port=80", "--target-port=8080")
	if got := lab("", "get", "service", "web", "-o", "jsonpath={.spec.selector.app} {.spec.ports[0].port} {.spec.ports[0].targetPort}"); got != "web 80 8080" {
		t.Errorf("the exposed service is %q, want selector app=web, port 80 to 8080", got)
	}
	lab("deployment.apps/web env updated", "set", "env", "deployment/web", "COLOR=blue")
	lab("successfully rolled out", "rollout", "status", "deployment/web", "--timeout=180s")
	lab("deployment.apps/web restarted", "rollout", "restart", "deployment/web")
	lab("successfully rolled out", "rollout", "status", "deployment/web", "--timeout=180s")
	lab("deployment.apps/web scaled", "scale", "deployment", "web", "--replicas=2")
	lab("horizontalpodautoscaler.autoscaling/web autoscaled", "autoscale", "deployment", "web", "--min=2", "--max=4", "--cpu-percent=80")
	if got := lab("", "get", "hpa", "web", "-o", "jsonpath={.spec.metrics[0].resource.target.averageUtilization}"); got != "80" {
		t.Errorf("kubectl autoscale's HPA targets %q%% CPU, want 80", got)
	}
	lab("job.batch/once created", "create", "job", "once", "--image="+image, "--", "python3", "-c", "print('done')")
	lab("condition met", "wait", "--for=condition=Complete", "job/once", "--timeout=180s")
	lab("done", "logs", "job/once")
	lab("cronjob.batch/tick created", "create", "cronjob", "tick", "--image="+image, "--schedule=*/5 * * * *", "--", "python3", "-c", "print(1)")

	// What get -o yaml prints goes back unchanged: replace takes it, and
	// diff finds nothing to change.
	yaml := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(yaml, []byte(lab("kind: Deployment", "get", "deployment", "web", "-o", "yaml")), 0o644); err != nil {
		t.Fatal(err)
	}
	lab("deployment.apps/web replaced", "replace", "-f", yaml)
	if err := os.WriteFile(yaml, []byte(lab("kind: Deployment", "get", "deployment", "web", "-o", "yaml")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := kubectl("-n", "lab", "diff", "-f", yaml); err != nil || out != "" {
		t.Errorf("kubectl diff of what get -o yaml printed: %v (exit status 1 is a difference)\n%s%s", err, out, errOut)
	}
	data, err := os.ReadFile(yaml)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yaml, []byte(strings.Replace(string(data), "replicas: 2", "replicas: 3", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := kubectl("-n", "lab", "diff", "-f", yaml); err == nil || !strings.Contains(out, "+  replicas: 3") {
		t.Errorf("kubectl diff of a changed replica count: %v, want it shown\n%s%s", err, out, errOut)
	}
	run("runAsNonRoot", "explain", "pod.spec.securityContext")
	out := lab("", "get", "all")
	for _, want := range []string{"pod/web-", "service/web", "deployment.apps/web", "replicaset.apps/web-", "job.batch/once", "cronjob.batch/tick"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get all lacks %q:\n%s", want, out)
		}
	}
}
