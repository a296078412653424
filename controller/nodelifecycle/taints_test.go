package nodelifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/nodecondition"
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

// TestConditionTaints: the taints kept for each Ready status, only the
// controller's own keys (NoSchedule and NoExecute) touched, one already
// there kept with its timeAdded.
func TestConditionTaints(t *testing.T) {
	now := time.Unix(20000, 0)
	then := metav1.NewTime(time.Unix(10000, 0))
	at := metav1.NewTime(now)
	admin := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}
	// An admin's taint of the controller's key with another effect is his.
	adminSoft := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectPreferNoSchedule}
	taint := func(key string, effect corev1.TaintEffect, added *metav1.Time) corev1.Taint {
		return corev1.Taint{Key: key, Effect: effect, TimeAdded: added}
	}
	unreachable := []corev1.Taint{taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule, nil), taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, &then)}
	notReady := []corev1.Taint{taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule, nil), taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, &then)}
	cases := []struct {
		name    string
		ready   string
		taints  []corev1.Taint
		want    []corev1.Taint
		changed bool
	}{
		{"ready, none", api.ConditionTrue, nil, nil, false},
		{"ready, an admin's kept", api.ConditionTrue, []corev1.Taint{admin}, []corev1.Taint{admin}, false},
		{"ready again: unreachable goes, the admin's stay", api.ConditionTrue, append([]corev1.Taint{admin, adminSoft}, unreachable...), []corev1.Taint{admin, adminSoft}, true},
		{"ready again: not-ready goes", api.ConditionTrue, notReady, nil, true},
		{"no Ready condition yet: none", "", unreachable, nil, true},
		{"unknown: unreachable added, NoExecute stamped", api.ConditionUnknown, []corev1.Taint{admin},
			[]corev1.Taint{admin, taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule, nil), taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, &at)}, true},
		{"unknown, tainted already: kept with its time", api.ConditionUnknown, unreachable, unreachable, false},
		{"unknown, half tainted: the other added", api.ConditionUnknown, unreachable[1:], []corev1.Taint{unreachable[1], unreachable[0]}, true},
		{"false: not-ready added", api.ConditionFalse, nil,
			[]corev1.Taint{taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule, nil), taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, &at)}, true},
		{"unknown to false: unreachable swapped for not-ready", api.ConditionFalse, append([]corev1.Taint{admin}, unreachable...),
			[]corev1.Taint{admin, taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule, nil), taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, &at)}, true},
		{"false to unknown: not-ready swapped for unreachable", api.ConditionUnknown, notReady,
			[]corev1.Taint{taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule, nil), taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, &at)}, true},
	}
	for _, c := range cases {
		got, changed := withConditionTaints(c.taints, c.ready, now)
		if changed != c.changed || !equality.Semantic.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v changed=%v, want %+v changed=%v", c.name, got, changed, c.want, c.changed)
		}
	}
}

// TestEvictionByConditionTaints: what becomes of a pod on a node tainted
// for its Ready condition, some time after the taint came.
func TestEvictionByConditionTaints(t *testing.T) {
	const (
		kept     = "kept"
		forced   = "marked lost, deleted at once"
		graceful = "deleted with its grace period"
	)
	start := time.Unix(10000, 0)
	tol := func(key string, secs *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}
	}
	secs := func(n int64) *int64 { return &n }
	admin := corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: start.Add(-time.Hour)}}
	cases := []struct {
		name        string
		ready       string
		admin       bool
		tolerations []corev1.Toleration
		deleting    bool
		after       time.Duration
		want        string
	}{
		{"unreachable, untolerated", api.ConditionUnknown, false, nil, false, 0, forced},
		{"unreachable, tolerated 300 s, 299 s on", api.ConditionUnknown, false, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, secs(300))}, false, 299 * time.Second, kept},
		{"unreachable, tolerated 300 s, 300 s on", api.ConditionUnknown, false, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, secs(300))}, false, 300 * time.Second, forced},
		{"unreachable, tolerated for good (a DaemonSet's)", api.ConditionUnknown, false, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, false, time.Hour, kept},
		{"unreachable, not-ready tolerated only", api.ConditionUnknown, false, []corev1.Toleration{tol(corev1.TaintNodeNotReady, nil)}, false, 0, forced},
		{"unreachable, every taint tolerated", api.ConditionUnknown, false, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, false, time.Hour, kept},
		{"unreachable, an admin's taint untolerated", api.ConditionUnknown, true, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, false, 0, forced},
		{"unreachable, being deleted: no kubelet finishes it", api.ConditionUnknown, false, nil, true, 0, forced},
		{"not ready, untolerated", api.ConditionFalse, false, nil, false, 0, graceful},
		{"not ready, tolerated 60 s, 30 s on", api.ConditionFalse, false, []corev1.Toleration{tol(corev1.TaintNodeNotReady, secs(60))}, false, 30 * time.Second, kept},
		{"not ready, tolerated 60 s, 61 s on", api.ConditionFalse, false, []corev1.Toleration{tol(corev1.TaintNodeNotReady, secs(60))}, false, 61 * time.Second, graceful},
		{"not ready, unreachable tolerated only", api.ConditionFalse, false, []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, false, 0, graceful},
		{"not ready, being deleted: its kubelet finishes it", api.ConditionFalse, false, nil, true, 0, kept},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := node("n1", start)
			nodecondition.Ready(n).Status = c.ready
			n.Spec.Taints, _ = withConditionTaints(nil, c.ready, start)
			if c.admin {
				n.Spec.Taints = append(n.Spec.Taints, admin)
			}
			p := boundPod("p", "n1")
			p.Spec.Tolerations = c.tolerations
			if c.deleting {
				p.DeletionTimestamp = &start
			}
			e := setup(t, []*api.Node{n}, []*api.Pod{p})
			e.advance(c.after)
			if err := e.nc.evictByTaints(context.Background(), n); err != nil {
				t.Fatal(err)
			}
			got := kept
			switch {
			case len(e.api.deleted) > 0 && len(e.api.evicted) > 0:
				got = "both deleted and evicted"
			case len(e.api.deleted) > 0:
				got = forced
			case len(e.api.evicted) > 0:
				got = graceful
			}
			if got != c.want {
				t.Fatalf("%s, want %s", got, c.want)
			}
			if got == forced && !c.deleting && (len(e.api.pods) != 1 || e.api.pods[0].Status.Reason != ReasonNodeLost) {
				t.Fatalf("pod status writes %+v, want it marked NodeLost", e.api.pods)
			}
		})
	}
}
