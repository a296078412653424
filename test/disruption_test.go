package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
)

// budgetManifest is a Deployment and its PodDisruptionBudget as
// Kubernetes' documentation writes them.
const budgetManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: nginx
        resources:
          requests: {cpu: 100m}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web-pdb
spec:
  minAvailable: 2
  selector:
    matchLabels:
      app: web
`

// TestDrainHonoursDisruptionBudget: with stock kubectl, a drain evicts
// through the eviction subresource, one pod at a time as the budget
// allows (kubectl retrying the 429s), so that the Deployment never has
// fewer than minAvailable ready pods; a budget allowing nothing stops the
// drain and keeps the pods.
func TestDrainHonoursDisruptionBudget(t *testing.T) {
	t.Parallel()
	cl := startSimCluster(t)
	srv, ctx := cl.srv, cl.ctx
	cl.nodes.add(ctx, "pdb-a", "4", "4Gi", nil)
	cl.nodes.add(ctx, "pdb-b", "4", "4Gi", nil)

	// All three pods on pdb-a.
	mustKubectl(t, srv, "cordoned", "cordon", "pdb-b")
	manifest := writeManifest(t, "web.yaml", budgetManifest)
	mustKubectl(t, srv, "poddisruptionbudget.policy/web-pdb created", "apply", "-f", manifest)
	eventually(t, 30*time.Second, "three pods on pdb-a", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return len(byNode["pdb-a"]) == 3, fmt.Sprint(byNode)
	})
	budget := func() api.PodDisruptionBudgetStatus {
		pdb, err := srv.Client.PodDisruptionBudgets("default").Get(ctx, "web-pdb")
		if err != nil {
			t.Fatal(err)
		}
		return pdb.Status
	}
	eventually(t, 30*time.Second, "the budget allowing one disruption", func() (bool, string) {
		st := budget()
		return st.DisruptionsAllowed == 1 && st.CurrentHealthy == 3 && st.DesiredHealthy == 2 && st.ExpectedPods == 3, fmt.Sprintf("%+v", st)
	})
	mustKubectl(t, srv, "web-pdb   2               N/A               1", "get", "pdb")
	mustKubectl(t, srv, "uncordoned", "uncordon", "pdb-b")

	// Watch the ready pods while pdb-a is drained.
	ready := watchReady(t, srv.Client)
	eventually(t, 30*time.Second, "the watch seeing the three ready pods", func() (bool, string) {
		ready.reset()
		return ready.fewestSeen() == 3, fmt.Sprint(ready.fewestSeen())
	})
	out, errOut, err := kubectl(t, srv, "drain", "pdb-a", "--ignore-daemonsets", "--timeout=120s")
	if err != nil || !strings.Contains(out, "node/pdb-a drained") {
		t.Fatalf("kubectl drain pdb-a: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(errOut, "Cannot evict pod as it would violate the pod's disruption budget") {
		t.Errorf("the drain was never held back by the budget:\n%s\n%s", out, errOut)
	}
	if n := ready.fewestSeen(); n < 2 {
		t.Errorf("the drain left %d ready pods, under the budget's 2", n)
	}
	eventually(t, 30*time.Second, "three pods on pdb-b", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return len(byNode["pdb-b"]) == 3 && len(byNode["pdb-a"]) == 0, fmt.Sprint(byNode)
	})

	// A budget allowing nothing: the drain times out, the pods stay.
	mustKubectl(t, srv, "patched", "patch", "pdb", "web-pdb", "--type=merge", "-p", `{"spec":{"minAvailable":null,"maxUnavailable":0}}`)
	eventually(t, 30*time.Second, "the budget allowing nothing", func() (bool, string) {
		st := budget()
		return st.DisruptionsAllowed == 0 && st.DesiredHealthy == 3, fmt.Sprintf("%+v", st)
	})
	mustKubectl(t, srv, "uncordoned", "uncordon", "pdb-a")
	if out, errOut, err := kubectl(t, srv, "drain", "pdb-b", "--ignore-daemonsets", "--timeout=8s"); err == nil ||
		!strings.Contains(errOut, "disruption budget") {
		t.Errorf("kubectl drain under a budget allowing nothing: %v\n%s%s", err, out, errOut)
	}
	byNode, _ := podsByNode(t, ctx, srv.Client, "default")
	if len(byNode["pdb-b"]) != 3 {
		t.Errorf("pods left pdb-b under a budget allowing nothing: %v", byNode)
	}
}
