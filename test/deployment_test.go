package test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// webDeployment is webReplicaSet's pods as a Deployment, VERSION in their
// environment, rolled one pod at a time (maxSurge 1, maxUnavailable 1).
func webDeployment(replicas int32, version string) *api.Deployment {
	rs := webReplicaSet(replicas)
	tmpl := rs.Spec.Template
	tmpl.Spec.Containers[0].Env = []api.EnvVar{{Name: "VERSION", Value: version}}
	one := api.IntOrString("1")
	return &api.Deployment{
		ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.DeploymentSpec{Replicas: &replicas, Selector: rs.Spec.Selector, Template: tmpl,
			Strategy: api.DeploymentStrategy{Type: api.DeploymentRollingUpdate, RollingUpdate: &api.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &one}}},
	}
}

// readyWatch follows the ready, not terminating pods of app=web through a
// watch, which misses no change, and keeps the fewest it saw since reset.
type readyWatch struct {
	mu     sync.Mutex
	pods   map[string]*api.Pod
	fewest int
}

func watchReady(t *testing.T, c *client.Client) *readyWatch {
	return watchReadyLabel(t, c, "app=web")
}

// watchReadyLabel follows the pods of the default namespace selected by
// selector as watchReady does those of app=web.
func watchReadyLabel(t *testing.T, c *client.Client, selector string) *readyWatch {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &readyWatch{pods: map[string]*api.Pod{}, fewest: -1}
	events := c.Pods("default").Watch(ctx, client.ListOptions{LabelSelector: selector})
	go func() {
		for ev := range events {
			w.mu.Lock()
			if ev.Type == api.Deleted {
				delete(w.pods, ev.Object.Name)
			} else {
				w.pods[ev.Object.Name] = ev.Object
			}
			if n := w.readyLocked(); w.fewest >= 0 && n < w.fewest {
				w.fewest = n
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *readyWatch) readyLocked() int {
	n := 0
	for _, p := range w.pods {
		if p.DeletionTimestamp == nil && podReady(p) {
			n++
		}
	}
	return n
}

// reset starts counting the fewest from now.
func (w *readyWatch) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fewest = w.readyLocked()
}

func (w *readyWatch) fewestSeen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fewest
}

// TestDeploymentRollingUpdate: a three-replica Deployment rolls a new
// template out one pod at a time and never has fewer than two ready pods;
// mkctl rollout status follows it, history lists both revisions, undo
// brings the first template back (as revision 3), and kubectl rollout
// status and undo work on it too; a paused Deployment rolls nothing out
// until resumed.
func TestDeploymentRollingUpdate(t *testing.T) {
	cl := framework.StartCluster(t, controller.Config{}, "dep", 2, 85)
	cl.Containerd.ImportPythonRuntime(t)
	s := cl.APIServer
	ctx := context.Background()
	deps := s.Client.Deployments("default")
	if _, err := deps.Create(ctx, webDeployment(3, "v1")); err != nil {
		t.Fatal(err)
	}
	mkOK := func(want string, args ...string) string {
		t.Helper()
		code, out, errOut := mk(t, append([]string{"--server", s.URL}, args...)...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("mkctl %s: %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	mkOK(`deployment "web" successfully rolled out`, "rollout", "status", "deploy/web", "--timeout=3m")
	w := watchReady(t, s.Client)
	waitUntil(t, 30*time.Second, "the watch seeing three ready pods", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.readyLocked() == 3
	})

	// A new template: rolled out with two ready pods at least, always.
	w.reset()
	mustKubectl(t, s, "deployment.apps/web env updated", "set", "env", "deploy/web", "VERSION=v2")
	mkOK(`deployment "web" successfully rolled out`, "rollout", "status", "deploy/web", "--timeout=3m")
	t.Logf("the rolling update kept %d ready pods at least", w.fewestSeen())
	if n := w.fewestSeen(); n < 2 {
		t.Errorf("the rolling update went down to %d ready pods, want 2 at least", n)
	}
	rss, _, err := s.Client.ReplicaSets("default").List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byRevision := map[string]*api.ReplicaSet{}
	for _, rs := range rss {
		byRevision[rs.Annotations[api.AnnotationRevision]] = rs
	}
	if len(rss) != 2 || byRevision["1"] == nil || byRevision["2"] == nil || *byRevision["1"].Spec.Replicas != 0 || *byRevision["2"].Spec.Replicas != 3 {
		t.Fatalf("replicasets after the update: %d, revisions %v", len(rss), byRevision)
	}
	out := mkOK("REVISION", "rollout", "history", "deploy/web")
	if !strings.Contains(out, "1 ") || !strings.Contains(out, "2 ") {
		t.Errorf("mkctl rollout history:\n%s", out)
	}
	mustKubectl(t, s, "READY", "get", "deploy", "-o", "wide")

	// mkctl rollout undo: the v1 template again, as revision 3.
	w.reset()
	mkOK("rolled back to revision 1", "rollout", "undo", "deploy/web")
	mkOK(`deployment "web" successfully rolled out`, "rollout", "status", "deploy/web", "--timeout=3m")
	d, err := deps.Get(ctx, "web")
	if err != nil || d.Spec.Template.Spec.Containers[0].Env[0].Value != "v1" {
		t.Fatalf("after undo: %v, template env %v", err, d.Spec.Template.Spec.Containers[0].Env)
	}
	if rs, err := s.Client.ReplicaSets("default").Get(ctx, byRevision["1"].Name); err != nil || rs.Annotations[api.AnnotationRevision] != "3" || *rs.Spec.Replicas != 3 {
		t.Errorf("the first replicaset after undo: %v %+v", err, rs)
	}
	if n := w.fewestSeen(); n < 2 {
		t.Errorf("the rollback went down to %d ready pods, want 2 at least", n)
	}

	// kubectl's own rollout commands read the same status and revisions.
	mustKubectl(t, s, "rolled back", "rollout", "undo", "deploy/web")
	mustKubectl(t, s, "successfully rolled out", "rollout", "status", "deploy/web", "--timeout=3m")
	if d, err := deps.Get(ctx, "web"); err != nil || d.Spec.Template.Spec.Containers[0].Env[0].Value != "v2" {
		t.Fatalf("after kubectl rollout undo: %v", err)
	}

	// Paused: a template change waits; resumed, it rolls out.
	mkOK("deployment.apps/web paused", "rollout", "pause", "deploy/web")
	mustKubectl(t, s, "deployment.apps/web env updated", "set", "env", "deploy/web", "VERSION=v3")
	waitUntil(t, 30*time.Second, "the paused deployment observed", func() bool {
		d, err := deps.Get(ctx, "web")
		return err == nil && d.Status.ObservedGeneration == d.Generation
	})
	if rss, _, err := s.Client.ReplicaSets("default").List(ctx, client.ListOptions{}); err != nil || len(rss) != 2 {
		t.Errorf("a paused deployment made a replicaset: %d (%v)", len(rss), err)
	}
	mkOK("deployment.apps/web resumed", "rollout", "resume", "deploy/web")
	mkOK(`deployment "web" successfully rolled out`, "rollout", "status", "deploy/web", "--timeout=3m")
	if rss, _, err := s.Client.ReplicaSets("default").List(ctx, client.ListOptions{}); err != nil || len(rss) != 3 {
		t.Errorf("after resume: %d replicasets (%v), want 3", len(rss), err)
	}
}
