package test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

// TestTaintsWithKubectl: with stock kubectl, a PreferNoSchedule taint
// steers new pods to the other node, and a NoExecute taint evicts what
// does not tolerate it: at once, after its tolerationSeconds, or never;
// the taint removed, nothing more goes.
func TestTaintsWithKubectl(t *testing.T) {
	t.Parallel()
	cl := startSimCluster(t)
	srv, ctx := cl.srv, cl.ctx
	cl.nodes.add(ctx, "taint-a", "4", "4Gi", nil)
	cl.nodes.add(ctx, "taint-b", "2", "2Gi", nil)
	pods := srv.Client.Pods("default")

	// taint-a has more room, but a taint the pods do not tolerate.
	mustKubectl(t, srv, "node/taint-a tainted", "taint", "node", "taint-a", "dedicated=batch:PreferNoSchedule")
	for i := range 2 {
		if _, err := pods.Create(ctx, requestPod(fmt.Sprintf("steered-%d", i), "100m", "")); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "the new pods on the untainted node", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return len(byNode["taint-b"]) == 2, fmt.Sprint(byNode)
	})

	// Pods on taint-a: one tolerating nothing, one a NoExecute taint for
	// 3 s, one for good.
	three := int64(3)
	for _, p := range []struct {
		name string
		tol  []corev1.Toleration
	}{
		{"plain", nil},
		{"for-a-while", []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &three}}},
		{"for-good", []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
	} {
		pod := requestPod(p.name, "100m", "")
		pod.Spec.NodeName, pod.Spec.Tolerations = "taint-a", p.tol
		if _, err := pods.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	onA := func() []string {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return slices.Sorted(slices.Values(byNode["taint-a"]))
	}
	eventually(t, 30*time.Second, "three pods on taint-a", func() (bool, string) { return len(onA()) == 3, fmt.Sprint(onA()) })
	tainted := time.Now()
	mustKubectl(t, srv, "node/taint-a tainted", "taint", "node", "taint-a", "maintenance=yes:NoExecute")
	eventually(t, 30*time.Second, "the pod tolerating nothing evicted", func() (bool, string) {
		return !slices.Contains(onA(), "plain"), fmt.Sprint(onA())
	})
	if got := onA(); !slices.Contains(got, "for-a-while") && time.Since(tainted) < 3*time.Second {
		t.Errorf("the pod tolerating the taint for 3 s went before 3 s: %v", got)
	}
	eventually(t, 30*time.Second, "the pod tolerating it 3 s evicted", func() (bool, string) {
		return slices.Equal(onA(), []string{"for-good"}), fmt.Sprint(onA())
	})
	if d := time.Since(tainted); d < 3*time.Second {
		t.Errorf("the pod tolerating the taint for 3 s went after %v", d)
	}
	mustKubectl(t, srv, "node/taint-a untainted", "taint", "node", "taint-a", "maintenance-")
	p, err := pods.Get(ctx, "for-good")
	if err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the pod tolerating the taint for good: %v, deletion %v", err, p)
	}

	// Drained, taint-b is cordoned and empty; uncordoned, it takes pods.
	mustKubectl(t, srv, "node/taint-b drained", "drain", "taint-b", "--ignore-daemonsets", "--force", "--timeout=60s")
	eventually(t, 30*time.Second, "taint-b empty", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return len(byNode["taint-b"]) == 0, fmt.Sprint(byNode)
	})
	mustKubectl(t, srv, "SchedulingDisabled", "get", "node", "taint-b")
	mustKubectl(t, srv, "node/taint-b uncordoned", "uncordon", "taint-b")
}

// spreadDeployment spreads its pods over zones as Kubernetes'
// documentation writes it.
const spreadDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: spread
spec:
  replicas: 4
  selector:
    matchLabels: {app: spread}
  template:
    metadata:
      labels: {app: spread}
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels: {app: spread}
      containers:
      - name: c
        image: busybox
        resources:
          requests: {cpu: 100m}
`

// TestTopologySpreadWithKubectl: a Deployment spread over two zones (two
// nodes in one, a smaller one in the other) puts half its pods in each,
// though least-allocated alone would favour the zone with more room.
func TestTopologySpreadWithKubectl(t *testing.T) {
	t.Parallel()
	cl := startSimCluster(t)
	srv, ctx := cl.srv, cl.ctx
	for _, n := range []struct{ name, cpu, zone string }{{"spread-a", "4", "z1"}, {"spread-b", "4", "z1"}, {"spread-c", "1", "z2"}} {
		cl.nodes.add(ctx, n.name, n.cpu, n.cpu+"Gi", map[string]string{"topology.kubernetes.io/zone": n.zone, "kubernetes.io/hostname": n.name})
	}
	manifest := writeManifest(t, "spread.yaml", spreadDeployment)
	mustKubectl(t, srv, "deployment.apps/spread created", "apply", "-f", manifest)
	eventually(t, time.Minute, "two pods in each zone", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return len(byNode["spread-c"]) == 2 && len(byNode["spread-a"])+len(byNode["spread-b"]) == 2, fmt.Sprint(byNode)
	})

	// One replica per node (required anti-affinity on the host name): of
	// four, three run and one waits, saying why.
	if err := os.WriteFile(manifest, []byte(onePerNode), 0o644); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, srv, "deployment.apps/one-per-node created", "apply", "-f", manifest)
	eventually(t, time.Minute, "one replica on each node and one pending", func() (bool, string) {
		pods, _, err := srv.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=one-per-node"})
		if err != nil {
			return false, err.Error()
		}
		byNode, pending := map[string]int{}, ""
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				if c := podCondition(p, api.PodScheduled); c != nil {
					pending = c.Message
				}
				continue
			}
			byNode[p.Spec.NodeName]++
		}
		return len(pods) == 4 && len(byNode) == 3 && byNode["spread-a"] == 1 && byNode["spread-b"] == 1 && byNode["spread-c"] == 1 &&
			strings.Contains(pending, "didn't match pod anti-affinity rules"), fmt.Sprint(byNode, " pending: ", pending)
	})
}

const onePerNode = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: one-per-node
spec:
  replicas: 4
  selector:
    matchLabels: {app: one-per-node}
  template:
    metadata:
      labels: {app: one-per-node}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchExpressions:
              - {key: app, operator: In, values: [one-per-node]}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: c
        image: busybox
`
