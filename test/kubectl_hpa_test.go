package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minik8s/test/framework"
)

// hpaV1Manifest is an HPA as older tutorials write it: autoscaling/v1.
const hpaV1Manifest = `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: %s
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: php
  minReplicas: 1
  maxReplicas: %d
  targetCPUUtilizationPercentage: %d
`

const hpaPodsMetric = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: rps
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  metrics:
  - type: Pods
    pods:
      metric: {name: requests_per_second}
      target: {type: AverageValue, averageValue: "100"}
`

// TestKubectlAutoscaleAndHPAV1: kubectl autoscale (which writes
// autoscaling/v1) makes an HPA that autoscaling/v2 shows with its CPU
// target; an autoscaling/v1 manifest applies (client-side, then changed)
// and a memory metric set in v2 survives an update made in v1; a
// server-side apply in v1 owns its fields and conflicts with v2's owners.
func TestKubectlAutoscaleAndHPAV1(t *testing.T) {
	s := framework.StartAPIServer(t)
	run := func(want string, args ...string) string { t.Helper(); return mustKubectl(t, s, want, args...) }
	run("deployment.apps/web created", "create", "deployment", "web", "--image", "minik8s/python-runtime:latest")
	run("horizontalpodautoscaler.autoscaling/web autoscaled", "autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=60")
	if got := run("", "get", "hpa", "web", "-o", "jsonpath={.apiVersion} {.spec.minReplicas} {.spec.maxReplicas} {.spec.metrics[0].resource.name} {.spec.metrics[0].resource.target.averageUtilization}"); got != "autoscaling/v2 2 5 cpu 60" {
		t.Errorf("kubectl get hpa web (v2): %q", got)
	}
	if got := run("", "get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "jsonpath={.apiVersion} {.spec.targetCPUUtilizationPercentage}"); got != "autoscaling/v1 60" {
		t.Errorf("kubectl get horizontalpodautoscalers.v1.autoscaling web: %q", got)
	}

	run("targetCPUUtilizationPercentage\t<integer>", "explain", "hpa.spec", "--api-version=autoscaling/v1")
	run("metrics\t<[]MetricSpec>", "explain", "hpa.spec")

	dir := t.TempDir()
	manifest := func(name string, max, target int) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(fmt.Sprintf(hpaV1Manifest, name, max, target)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run("horizontalpodautoscaler.autoscaling/php created", "apply", "-f", manifest("php", 10, 50))
	run("horizontalpodautoscaler.autoscaling/php unchanged", "apply", "-f", manifest("php", 10, 50))
	run("horizontalpodautoscaler.autoscaling/php configured", "apply", "-f", manifest("php", 10, 70))
	if got := run("", "get", "hpa", "php", "-o", "jsonpath={.spec.metrics[*].resource.target.averageUtilization}"); got != "70" {
		t.Errorf("after applying a changed v1 manifest the v2 targets are %q, want 70", got)
	}

	// A memory metric (which v1 has no field for) rides in an annotation
	// through a v1 read and write, and is back in v2.
	run("patched", "patch", "hpa", "php", "--type=json", "-p",
		`[{"op":"add","path":"/spec/metrics/-","value":{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"100Mi"}}}}]`)
	run("patched", "patch", "horizontalpodautoscalers.v1.autoscaling", "php", "--type=merge", "-p", `{"spec":{"maxReplicas":4}}`)
	if got := run("", "get", "hpa", "php", "-o", "jsonpath={.spec.maxReplicas} {.spec.metrics[*].resource.name} {.metadata.annotations}"); !strings.HasPrefix(got, "4 memory cpu ") || strings.Contains(got, "autoscaling.alpha") {
		t.Errorf("after a v1 patch the v2 HPA is %q, want maxReplicas 4, memory and cpu metrics, no conversion annotations", got)
	}
	if got := run("", "get", "horizontalpodautoscalers.v1.autoscaling", "php", "-o", "jsonpath={.metadata.annotations}"); !strings.Contains(got, "autoscaling.alpha.kubernetes.io/metrics") {
		t.Errorf("v1 shows no metrics annotation: %q", got)
	}

	// A Pods metric (no custom metrics API serves it) is kept, and v1
	// carries it in Kubernetes' annotation.
	pods := filepath.Join(dir, "pods.yaml")
	if err := os.WriteFile(pods, []byte(hpaPodsMetric), 0o644); err != nil {
		t.Fatal(err)
	}
	run("horizontalpodautoscaler.autoscaling/rps created", "apply", "-f", pods)
	if got := run("", "get", "horizontalpodautoscalers.v1.autoscaling", "rps", "-o", "jsonpath={.metadata.annotations}"); !strings.Contains(got, `requests_per_second`) {
		t.Errorf("v1 does not carry the Pods metric: %q", got)
	}

	// Server-side apply in v1: it creates, then meets the field another
	// manager set in v2 (named in the conflict), and takes it when forced.
	run("horizontalpodautoscaler.autoscaling/ssa serverside-applied", "apply", "--server-side", "-f", manifest("ssa", 10, 50))
	run("patched", "patch", "hpa", "ssa", "--type=merge", "-p", `{"spec":{"maxReplicas":7}}`)
	if out, errOut, err := kubectl(t, s, "apply", "--server-side", "-f", manifest("ssa", 9, 50)); err == nil || !strings.Contains(errOut, "kubectl-patch") || !strings.Contains(errOut, ".spec.maxReplicas") {
		t.Errorf("a v1 apply over a field kubectl-patch set in v2: %v, want a conflict naming both\n%s%s", err, out, errOut)
	}
	run("serverside-applied", "apply", "--server-side", "--force-conflicts", "-f", manifest("ssa", 9, 50))
	if got := run("", "get", "hpa", "ssa", "-o", "jsonpath={.spec.maxReplicas} {.metadata.managedFields[*].manager} {.metadata.managedFields[*].apiVersion}"); !strings.HasPrefix(got, "9 kubectl ") || !strings.Contains(got, "autoscaling/v1") {
		t.Errorf("after a forced v1 apply the HPA is %q, want maxReplicas 9, kubectl's fields in autoscaling/v1", got)
	}
}
