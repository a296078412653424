package nodelifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

func TestEvictionDelay(t *testing.T) {
	noExec := func(key string) corev1.Taint {
		return corev1.Taint{Key: key, Value: "v", Effect: corev1.TaintEffectNoExecute}
	}
	tol := func(key string, secs *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	secs := func(n int64) *int64 { return &n }
	cases := []struct {
		name        string
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		delay       time.Duration
		forever     bool
	}{
		{"untolerated", []corev1.Taint{noExec("a")}, nil, 0, false},
		{"one of two untolerated", []corev1.Taint{noExec("a"), noExec("b")}, []corev1.Toleration{tol("a", nil)}, 0, false},
		{"tolerated for good", []corev1.Taint{noExec("a")}, []corev1.Toleration{tol("a", nil)}, 0, true},
		{"tolerated a while", []corev1.Taint{noExec("a")}, []corev1.Toleration{tol("a", secs(30))}, 30 * time.Second, false},
		{"the shortest while", []corev1.Taint{noExec("a"), noExec("b")}, []corev1.Toleration{tol("a", secs(30)), tol("b", secs(10))}, 10 * time.Second, false},
		{"a limit anywhere limits", []corev1.Taint{noExec("a"), noExec("b")}, []corev1.Toleration{tol("a", nil), tol("b", secs(60))}, time.Minute, false},
		{"a negative while is none", []corev1.Taint{noExec("a")}, []corev1.Toleration{tol("a", secs(-5))}, 0, false},
		{"a toleration of every taint", []corev1.Taint{noExec("a"), noExec("b")}, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, 0, true},
	}
	for _, c := range cases {
		p := &api.Pod{Spec: api.PodSpec{Tolerations: c.tolerations}}
		delay, forever := evictionDelay(p, c.taints)
		if delay != c.delay || forever != c.forever {
			t.Errorf("%s: %v forever=%v, want %v forever=%v", c.name, delay, forever, c.delay, c.forever)
		}
	}
}

// TestNoExecuteTaintEvicts: on a live node tainted NoExecute (kubectl
// taint), a pod that does not tolerate the taint is deleted at once, one
// tolerating it for 30 s once 30 s have passed, one tolerating it for
// good never; a node without the taint keeps its pods.
func TestNoExecuteTaintEvicts(t *testing.T) {
	start := time.Unix(10000, 0)
	tainted := node("n1", start)
	tainted.Spec.Taints = []corev1.Taint{{Key: "maintenance", Value: "yes", Effect: corev1.TaintEffectNoExecute}}
	tainted.Spec.Taints = append(tainted.Spec.Taints, corev1.Taint{Key: "soft", Effect: corev1.TaintEffectNoSchedule})
	thirty := int64(30)
	while, always := boundPod("while", "n1"), boundPod("always", "n1")
	while.Spec.Tolerations = []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &thirty}}
	always.Spec.Tolerations = []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}
	e := setup(t, []*api.Node{tainted, node("n2", start)},
		[]*api.Pod{boundPod("plain", "n1"), while, always, boundPod("elsewhere", "n2")})
	ctx := context.Background()
	evicted := func() []string {
		e.api.mu.Lock()
		defer e.api.mu.Unlock()
		return slices.Sorted(slices.Values(e.api.evicted))
	}
	for _, n := range []string{"n1", "n2"} {
		if err := e.nc.sync(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if got := evicted(); !slices.Equal(got, []string{"default/plain"}) {
		t.Fatalf("evicted at once %v, want the pod that does not tolerate the taint", got)
	}
	// The node stays alive: its kubelet keeps posting heartbeats.
	beat := func() { e.nc.observe(node("n1", e.nc.now())) }
	e.advance(15 * time.Second)
	beat()
	e.advance(14 * time.Second)
	beat()
	e.api.evicted = nil
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := evicted(); !slices.Contains(got, "default/plain") || slices.Contains(got, "default/while") {
		t.Fatalf("after 29 s: evicted %v, want the untolerating pod again (the cache has not seen it go) and not the one tolerating 30 s", got)
	}
	e.advance(2 * time.Second)
	beat()
	e.api.evicted = nil
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := evicted(); !slices.Contains(got, "default/while") || slices.Contains(got, "default/always") {
		t.Fatalf("after 31 s: evicted %v, want the pod tolerating 30 s and not the one tolerating for good", got)
	}
	if got := e.api.deleted; len(got) != 0 {
		t.Errorf("force-deleted %v: a live node's pods are deleted with their grace period", got)
	}
}
