package test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"minik8s/test/harness"
)

// helm runs the real Helm 4 with kubeconfig in the machine's namespace,
// with a HOME of its own (its repositories, cache and plugins).
func (c *upCluster) helm(kubeconfig, home string, args ...string) (string, string, error) {
	c.t.Helper()
	bin, err := exec.LookPath("helm")
	if err != nil {
		harness.NeedE2E(c.t, "helm is not installed (.ci/run builds Helm 4 from hack/helm): %v", err)
	}
	return c.inMachine(6*time.Minute, bin, []string{"KUBECONFIG=" + kubeconfig, "HOME=" + home}, args...)
}

func (c *upCluster) mustHelm(kubeconfig, home, want string, args ...string) string {
	c.t.Helper()
	out, errOut, err := c.helm(kubeconfig, home, args...)
	if err != nil || !strings.Contains(out, want) {
		c.t.Fatalf("helm %s: %v, want %q in\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, want, out, errOut)
	}
	return out
}

// helmCharts walks Helm 4 (server-side apply, its default) through three
// charts on the cluster, as a chart's user does: the chart `helm create`
// makes (its image the node's runtime, which serves HTTP with a command),
// a chart whose pre-install and post-upgrade hooks are Jobs (a failing
// hook fails the upgrade), and a chart whose pods mount its Secret and
// ConfigMap. Each is installed, tested, upgraded, rolled back and
// uninstalled, and uninstalling leaves nothing of the release.
func helmCharts(c *upCluster, kubeconfig string) {
	t := c.t
	start := time.Now()
	defer func() { t.Logf("helm's charts: %v", time.Since(start).Round(time.Millisecond)) }()
	home := t.TempDir()
	run := func(want string, args ...string) string {
		t.Helper()
		return c.mustHelm(kubeconfig, home, want, args...)
	}
	chart := func(name string) string { return filepath.Join(moduleRoot(t), "test", "testdata", "charts", name) }
	// gone waits until nothing of release is left in ns but its hooks'
	// resources, which Helm does not manage as part of a release and does
	// not uninstall (Helm's documentation says so): a test pod, a failed
	// hook's Job and its pods. A workload's pods go after it, as the
	// garbage collector gets to them.
	gone := func(ns, release string, hooks ...string) {
		t.Helper()
		c.waitFor(2*time.Minute, "nothing of "+release+" left in "+ns, func() (bool, string) {
			out := c.mustKubectl(kubeconfig, "get", "deploy,rs,pods,svc,cm,secret,sa,jobs", "-n", ns, "-o", "name")
			var left []string
		next:
			for _, line := range strings.Fields(out) {
				name := line[strings.Index(line, "/")+1:]
				if !strings.HasPrefix(name, release) {
					continue
				}
				for _, h := range hooks {
					if name == h || strings.HasPrefix(line, "pod/") && strings.HasPrefix(name, h+"-") {
						continue next
					}
				}
				left = append(left, line)
			}
			return len(left) == 0, strings.Join(left, " ")
		})
	}

	// The chart helm create makes.
	dir := t.TempDir()
	run("Creating", "create", filepath.Join(dir, "web"))
	edit := func(file, old, new string) {
		t.Helper()
		p := filepath.Join(dir, "web", "templates", file)
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(data, []byte(old)) {
			t.Fatalf("%s from helm create has no %q (%v)", file, old, err)
		}
		if err := os.WriteFile(p, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("deployment.yaml", "imagePullPolicy: {{ .Values.image.pullPolicy }}\n",
		"imagePullPolicy: {{ .Values.image.pullPolicy }}\n          command: [\"python3\", \"-m\", \"http.server\", \"{{ .Values.service.port }}\"]\n")
	// python3 as PID 1 ignores SIGTERM: its pods would take their whole
	// grace period to go.
	edit("deployment.yaml", "      serviceAccountName:", "      terminationGracePeriodSeconds: 1\n      serviceAccountName:")
	edit(filepath.Join("tests", "test-connection.yaml"), "image: busybox", `image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"`)
	edit(filepath.Join("tests", "test-connection.yaml"), "command: ['wget']", "command: ['python3', '-c', 'import sys, urllib.request; urllib.request.urlopen(\"http://\" + sys.argv[1])']")
	web := []string{filepath.Join(dir, "web"), "-n", "web", "--set", "image.repository=minik8s/python-runtime,image.tag=latest,service.port=8000"}
	// --wait: helm test calls the Service, whose pod must be ready.
	run("STATUS: deployed", append([]string{"install", "web", "--create-namespace", "--wait", "--timeout", "3m"}, web...)...)
	run("Succeeded", "test", "web", "-n", "web")
	run("REVISION: 2", append([]string{"upgrade", "web", "--set", "replicaCount=2"}, web...)...)
	if got := c.mustKubectl(kubeconfig, "get", "deploy", "web", "-n", "web", "-o", "jsonpath={.spec.replicas}"); got != "2" {
		t.Errorf("after the upgrade, replicas %s", got)
	}
	run("Rollback was a success", "rollback", "web", "1", "-n", "web")
	if got := c.mustKubectl(kubeconfig, "get", "deploy", "web", "-n", "web", "-o", "jsonpath={.spec.replicas}"); got != "1" {
		t.Errorf("after rolling back to revision 1, replicas %s", got)
	}
	run("uninstalled", "uninstall", "web", "-n", "web")
	gone("web", "web", "web-test-connection")

	// Hooks: helm waits for each hook's Job and records how it ended.
	hookPhases := func(release string) map[string]string {
		t.Helper()
		var st struct {
			Hooks []struct {
				Name    string `json:"name"`
				LastRun struct {
					Phase string `json:"phase"`
				} `json:"last_run"`
			} `json:"hooks"`
		}
		out := run("", "status", release, "-n", "hooks", "-o", "json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("helm status -o json: %v\n%s", err, out)
		}
		phases := map[string]string{}
		for _, h := range st.Hooks {
			phases[h.Name] = h.LastRun.Phase
		}
		return phases
	}
	run("STATUS: deployed", "install", "hk", chart("hooks"), "-n", "hooks", "--create-namespace")
	if p := hookPhases("hk"); p["hk-pre-install"] != "Succeeded" {
		t.Errorf("after install, hooks %v", p)
	}
	run("REVISION: 2", "upgrade", "hk", chart("hooks"), "-n", "hooks", "--set", "message=two")
	if p := hookPhases("hk"); p["hk-post-upgrade"] != "Succeeded" {
		t.Errorf("after upgrade, hooks %v", p)
	}
	if out, errOut, err := c.helm(kubeconfig, home, "upgrade", "hk", chart("hooks"), "-n", "hooks", "--set", "fail=true"); err == nil ||
		!strings.Contains(errOut, "post-upgrade") {
		t.Errorf("an upgrade whose hook fails: %v\n%s%s", err, out, errOut)
	}
	run("Rollback was a success", "rollback", "hk", "2", "-n", "hooks")
	if got := c.mustKubectl(kubeconfig, "get", "cm", "hk-config", "-n", "hooks", "-o", "jsonpath={.data.message}"); got != "two" {
		t.Errorf("after the rollback, message %q", got)
	}
	run("uninstalled", "uninstall", "hk", "-n", "hooks")
	gone("hooks", "hk", "hk-post-upgrade")

	// A Secret and a ConfigMap mounted in the release's pods: helm test
	// reads them; an upgrade's new values roll the pods and reach them.
	mounts := []string{chart("mounts"), "-n", "mounts"}
	run("STATUS: deployed", append([]string{"install", "mt", "--create-namespace"}, mounts...)...)
	run("Succeeded", "test", "mt", "-n", "mounts")
	run("REVISION: 2", append([]string{"upgrade", "mt", "--set", "greeting=bye,password=changed"}, mounts...)...)
	run("Succeeded", "test", "mt", "-n", "mounts")
	run("uninstalled", "uninstall", "mt", "-n", "mounts")
	gone("mounts", "mt")
}
