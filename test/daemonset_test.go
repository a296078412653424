package test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// agentDaemonSet is a DaemonSet as Kubernetes' documentation writes one:
// an HTTP server per node (a port the kubelet picks, as the nodes share
// the loopback), ready when it answers, rolled one node at a time.
const agentDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: default
  labels:
    k8s-app: agent
spec:
  selector:
    matchLabels:
      name: agent
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  template:
    metadata:
      labels:
        name: agent
    spec:
      tolerations:
      - key: node-role.kubernetes.io/control-plane
        operator: Exists
        effect: NoSchedule
      containers:
      - name: agent
        image: ` + containerdtest.PythonRuntimeImage + `
        command: ["sh", "-c", "exec python3 -m http.server \"$PORT\" --bind \"$HOST\""]
        env:
        - name: VERSION
          value: v1
        ports:
        - name: http
        resources:
          requests:
            cpu: 50m
            memory: 32Mi
        readinessProbe:
          httpGet:
            path: /
            port: http
          periodSeconds: 1
          failureThreshold: 1
`

// agentPods are the set's pods neither terminating nor ended, by node.
func agentPods(t *testing.T, c *client.Client) map[string][]*api.Pod {
	t.Helper()
	pods, _, err := c.Pods("default").List(context.Background(), client.ListOptions{LabelSelector: "name=agent"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*api.Pod{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != api.PodFailed && p.Status.Phase != api.PodSucceeded {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
		}
	}
	return out
}

// onEachNode says whether each of nodes runs one pod of the set, ready,
// with VERSION version, and no other node runs one.
func onEachNode(t *testing.T, c *client.Client, version string, nodes ...string) bool {
	byNode := agentPods(t, c)
	if len(byNode) != len(nodes) {
		return false
	}
	for _, n := range nodes {
		pods := byNode[n]
		if len(pods) != 1 || !podReady(pods[0]) || pods[0].Spec.Containers[0].Env[0].Value != version {
			return false
		}
	}
	return true
}

// TestDaemonSet: with stock kubectl, a DaemonSet from a manifest runs one
// pod on every node, on a node that joins later too; a new template rolls
// out one node at a time (kubectl rollout status), is recorded in
// ControllerRevisions (rollout history) and rolled back (rollout undo); a
// node selector narrows it to the nodes that match, and deleting it
// deletes its pods.
func TestDaemonSet(t *testing.T) {
	cl := framework.StartCluster(t, controller.Config{}, "ds", 2, 100)
	cl.Containerd.ImportPythonRuntime(t)
	s := cl.APIServer
	ctx := context.Background()
	manifest := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(manifest, []byte(agentDaemonSet), 0o644); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, s, "daemonset.apps/agent created", "apply", "-f", manifest)
	mustKubectl(t, s, `daemon set "agent" successfully rolled out`, "rollout", "status", "ds/agent", "--timeout=3m")
	waitUntil(t, 30*time.Second, "a ready pod on each node", func() bool { return onEachNode(t, s.Client, "v1", "ds-1", "ds-2") })
	out := mustKubectl(t, s, "agent", "get", "ds", "agent")
	if !strings.Contains(out, "DESIRED") || !strings.Contains(out, "NODE SELECTOR") {
		t.Errorf("kubectl get ds:\n%s", out)
	}

	// A node joining gets its pod.
	cl.Kubelets["ds-3"] = framework.StartKubelet(t, s.URL, cl.Containerd, "ds-3", "127.0.0.103")
	waitUntil(t, 2*time.Minute, "a ready pod on the node that joined", func() bool { return onEachNode(t, s.Client, "v1", "ds-1", "ds-2", "ds-3") })
	mustKubectl(t, s, `daemon set "agent" successfully rolled out`, "rollout", "status", "ds/agent", "--timeout=1m")

	// A new template: one node at a time (maxUnavailable 1), so two of
	// the three nodes always have a ready pod.
	w := watchReadyLabel(t, s.Client, "name=agent")
	waitUntil(t, 30*time.Second, "the watch seeing three ready pods", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.readyLocked() == 3
	})
	w.reset()
	mustKubectl(t, s, "daemonset.apps/agent env updated", "set", "env", "ds/agent", "VERSION=v2")
	mustKubectl(t, s, `daemon set "agent" successfully rolled out`, "rollout", "status", "ds/agent", "--timeout=3m")
	waitUntil(t, 30*time.Second, "v2 on each node", func() bool { return onEachNode(t, s.Client, "v2", "ds-1", "ds-2", "ds-3") })
	t.Logf("the rolling update kept %d ready pods at least", w.fewestSeen())
	if n := w.fewestSeen(); n < 2 {
		t.Errorf("the rolling update went down to %d ready pods, want 2 at least", n)
	}
	revs, _, err := s.Client.ControllerRevisions("default").List(ctx, client.ListOptions{LabelSelector: "name=agent"})
	if err != nil || len(revs) != 2 {
		t.Fatalf("controller revisions: %d (%v), want 2", len(revs), err)
	}
	out = mustKubectl(t, s, "REVISION", "rollout", "history", "ds/agent")
	if !strings.Contains(out, "1 ") || !strings.Contains(out, "2 ") {
		t.Errorf("kubectl rollout history:\n%s", out)
	}
	mustKubectl(t, s, "VERSION:\tv1", "rollout", "history", "ds/agent", "--revision=1")

	// Undo: the v1 template again, its revision now the newest (3).
	mustKubectl(t, s, "rolled back", "rollout", "undo", "ds/agent")
	mustKubectl(t, s, `daemon set "agent" successfully rolled out`, "rollout", "status", "ds/agent", "--timeout=3m")
	waitUntil(t, 30*time.Second, "v1 again on each node", func() bool { return onEachNode(t, s.Client, "v1", "ds-1", "ds-2", "ds-3") })
	revs, _, err = s.Client.ControllerRevisions("default").List(ctx, client.ListOptions{LabelSelector: "name=agent"})
	var newest int64
	for _, r := range revs {
		newest = max(newest, r.Revision)
	}
	if err != nil || len(revs) != 2 || newest != 3 {
		t.Errorf("controller revisions after undo: %d, newest %d (%v), want 2 and 3", len(revs), newest, err)
	}

	// A node selector: only the labelled node keeps its pod.
	mustKubectl(t, s, "node/ds-2 labeled", "label", "node", "ds-2", "agent=yes")
	mustKubectl(t, s, "daemonset.apps/agent patched", "patch", "ds", "agent", "-p", `{"spec":{"template":{"spec":{"nodeSelector":{"agent":"yes"}}}}}`)
	waitUntil(t, 2*time.Minute, "the pod of the labelled node only", func() bool { return onEachNode(t, s.Client, "v1", "ds-2") })
	mustKubectl(t, s, `daemon set "agent" successfully rolled out`, "rollout", "status", "ds/agent", "--timeout=1m")
	ds, err := s.Client.DaemonSets("default").Get(ctx, "agent")
	if err != nil || ds.Status.DesiredNumberScheduled != 1 || ds.Status.NumberMisscheduled != 0 {
		t.Fatalf("status with a node selector: %+v (%v)", ds.Status, err)
	}

	// Deleted, its pods and revisions go with it.
	mustKubectl(t, s, `daemonset.apps "agent" deleted`, "delete", "ds", "agent")
	waitUntil(t, time.Minute, "the set's pods and revisions gone", func() bool {
		pods, _, perr := s.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: "name=agent"})
		revs, _, rerr := s.Client.ControllerRevisions("default").List(ctx, client.ListOptions{})
		return perr == nil && rerr == nil && len(pods) == 0 && len(revs) == 0
	})
}
