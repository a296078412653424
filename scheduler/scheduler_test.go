package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
)

type fakeNodes []*api.Node

func (f fakeNodes) List(labels.Selector) []*api.Node { return f }

type fakePods struct {
	mu   sync.Mutex
	pods map[string]*api.Pod
}

func (f *fakePods) Get(ns, name string) (*api.Pod, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pods[ns+"/"+name]
	return p, ok
}

func (f *fakePods) put(p *api.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[cache.Key(p)] = p
}

type fakeBinder struct {
	mu    sync.Mutex
	binds []string
	err   error
}

func (f *fakeBinder) Bind(_ context.Context, ns, pod, uid, node string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.binds = append(f.binds, pod+"->"+node)
	return nil
}

type fakeStatus struct {
	mu     sync.Mutex
	writes []*api.Pod
}

func (f *fakeStatus) UpdatePodStatus(_ context.Context, p *api.Pod) (*api.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, p)
	return p, nil
}

func newTestScheduler(nodes ...*api.Node) (*Scheduler, *fakePods, *fakeBinder, *fakeStatus) {
	pods := &fakePods{pods: map[string]*api.Pod{}}
	b, st := &fakeBinder{}, &fakeStatus{}
	p, _ := NewPolicy(PolicyLeastAllocated)
	return New(p, "", fakeNodes(nodes), pods, b, st, 4), pods, b, st
}

// A pod bound but not yet seen bound in the watch still counts on its
// node: the next pod goes elsewhere instead of overcommitting it.
func TestAssumedPodsCount(t *testing.T) {
	s, pods, b, _ := newTestScheduler(testNode("a", "1", "1Gi"), testNode("b", "1", "1Gi"))
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		p := testPod(fmt.Sprintf("p%d", i), "800m", "")
		pods.put(p)
		s.cache.setPod(p)
		if err := s.sync(ctx, cache.Key(p)); err != nil {
			t.Fatal(err)
		}
	}
	s.binds.Wait()
	if len(b.binds) != 2 || b.binds[0] == b.binds[1] || nodeOf(b.binds[0]) == nodeOf(b.binds[1]) {
		t.Fatalf("binds %v: want one pod on each node", b.binds)
	}
	// Until the watch shows the binding, a sync of the same pod does nothing.
	if err := s.sync(ctx, "default/p0"); err != nil {
		t.Fatal(err)
	}
	s.binds.Wait()
	if len(b.binds) != 2 {
		t.Fatalf("pod bound twice: %v", b.binds)
	}
	// An update that does not show the binding yet keeps the assumption.
	s.cache.setPod(testPod("p0", "800m", ""))
	if !s.cache.isAssumed("default/p0", "uid-p0") {
		t.Fatal("stale update dropped the assumption")
	}
	// The watch confirms: the pod is counted as bound, no longer assumed.
	bound := testPod("p0", "800m", "")
	for _, bind := range b.binds {
		if strings.HasPrefix(bind, "p0->") {
			bound.Spec.NodeName = nodeOf(bind)
		}
	}
	s.cache.setPod(bound)
	if s.cache.isAssumed("default/p0", "uid-p0") {
		t.Fatal("assumption kept after the binding was seen")
	}
	if u := s.cache.usageLocked(bound.Spec.NodeName); u.req.milliCPU != 800 || u.pods != 1 {
		t.Fatalf("usage of %s = %+v", bound.Spec.NodeName, u)
	}
	// Terminated and deleted pods free their node.
	done := testPod("p0", "800m", "")
	done.Spec.NodeName, done.Status.Phase = bound.Spec.NodeName, api.PodSucceeded
	s.cache.setPod(done)
	if u := s.cache.usageLocked(bound.Spec.NodeName); u.pods != 0 {
		t.Fatalf("terminated pod still counted: %+v", u)
	}
}

func nodeOf(bind string) string {
	for i := range bind {
		if bind[i:i+2] == "->" {
			return bind[i+2:]
		}
	}
	return ""
}

func TestUnschedulableIsRecordedOnce(t *testing.T) {
	s, pods, b, st := newTestScheduler(testNode("a", "1", "1Gi"), testNode("b", "1", "1Gi", labeled("zone", "x")))
	ctx := context.Background()
	p := testPod("big", "2", "", selector("zone", "x"))
	pods.put(p)
	if err := s.sync(ctx, "default/big"); err != nil {
		t.Fatal(err)
	}
	if len(b.binds) != 0 || len(st.writes) != 1 {
		t.Fatalf("binds %v, status writes %d", b.binds, len(st.writes))
	}
	w := st.writes[0]
	var cond *api.PodCondition
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == api.PodScheduled {
			cond = &w.Status.Conditions[i]
		}
	}
	want := "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match node selector."
	if cond == nil || cond.Status != api.ConditionFalse || cond.Reason != "Unschedulable" || cond.Message != want {
		t.Fatalf("condition %+v, want False/Unschedulable %q", cond, want)
	}
	if p.Status.Conditions != nil {
		t.Fatal("the cached pod was changed")
	}
	if _, ok := s.unschedulable["default/big"]; !ok {
		t.Fatal("pod not remembered as unschedulable")
	}
	// Seen again with the condition written: nothing to write.
	pods.put(w)
	if err := s.sync(ctx, "default/big"); err != nil {
		t.Fatal(err)
	}
	if len(st.writes) != 1 {
		t.Fatalf("status written again with the same reason: %d writes", len(st.writes))
	}
}

func TestIgnoredPods(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		mod  func(*api.Pod)
	}{
		{"other scheduler", func(p *api.Pod) { p.Spec.SchedulerName = "other" }},
		{"being deleted", func(p *api.Pod) { p.DeletionTimestamp = &now }},
		{"bound", func(p *api.Pod) { p.Spec.NodeName = "a" }},
		{"failed", func(p *api.Pod) { p.Status.Phase = api.PodFailed }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, pods, b, st := newTestScheduler(testNode("a", "1", "1Gi"))
			p := testPod("p", "", "")
			tt.mod(p)
			pods.put(p)
			if err := s.sync(context.Background(), "default/p"); err != nil {
				t.Fatal(err)
			}
			s.binds.Wait()
			if len(b.binds) != 0 || len(st.writes) != 0 {
				t.Fatalf("acted on the pod: binds %v, writes %d", b.binds, len(st.writes))
			}
		})
	}
	s, pods, b, _ := newTestScheduler(testNode("a", "1", "1Gi"))
	p := testPod("p", "", "")
	p.Spec.SchedulerName = DefaultSchedulerName
	pods.put(p)
	_ = s.sync(context.Background(), "default/p")
	s.binds.Wait()
	if len(b.binds) != 1 {
		t.Fatal("pod naming this scheduler was not bound")
	}
}

// A refused binding drops the assumption, so the node's resources are free
// again, and the pod is tried again later.
func TestRefusedBindingIsForgotten(t *testing.T) {
	s, pods, b, _ := newTestScheduler(testNode("a", "1", "1Gi"))
	b.err = fmt.Errorf("pod is already bound: %w", errdefs.ErrConflict)
	p := testPod("p", "1", "")
	pods.put(p)
	if err := s.sync(context.Background(), "default/p"); err != nil {
		t.Fatal(err)
	}
	s.binds.Wait()
	if s.cache.isAssumed("default/p", "uid-p") {
		t.Fatal("assumption kept after the binding was refused")
	}
	if u := s.cache.usageLocked("a"); u.req.milliCPU != 0 {
		t.Fatalf("refused pod still counted: %+v", u)
	}
	if n := s.queue.NumRequeues("default/p"); n != 1 {
		t.Fatalf("pod requeued %d times, want 1 (rate-limited)", n)
	}
}

// Node changes that may let a pod fit retry unschedulable pods; heartbeats do not.
func TestSchedulingChanged(t *testing.T) {
	base := testNode("a", "1", "1Gi")
	later := time.Now()
	tests := []struct {
		name string
		mod  func(*api.Node)
		want bool
	}{
		{"heartbeat", func(n *api.Node) { n.Status.Conditions[0].LastHeartbeatTime = &later }, false},
		{"ready changes", notReady, true},
		{"capacity grows", func(n *api.Node) { n.Status.Capacity[api.ResourceCPU] = "2" }, true},
		{"label added", labeled("zone", "x"), true},
		{"cordoned", cordoned, true},
		{"tainted", tainted("k", "v", corev1.TaintEffectNoSchedule), true},
	}
	for _, tt := range tests {
		cur := cache.DeepCopy(base)
		tt.mod(cur)
		if got := schedulingChanged(base, cur); got != tt.want {
			t.Errorf("%s: changed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A pod with scheduling gates waits, saying so, until they are taken away.
func TestSchedulingGates(t *testing.T) {
	s, pods, b, st := newTestScheduler(testNode("a", "1", "1Gi"))
	ctx := context.Background()
	p := testPod("gated", "", "")
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
	pods.put(p)
	if err := s.sync(ctx, "default/gated"); err != nil {
		t.Fatal(err)
	}
	if len(b.binds) != 0 || len(st.writes) != 1 {
		t.Fatalf("binds %v, status writes %d", b.binds, len(st.writes))
	}
	c := st.writes[0].Status.Conditions
	if len(c) != 1 || c[0].Reason != "SchedulingGated" || c[0].Status != api.ConditionFalse {
		t.Fatalf("conditions %+v", c)
	}
	if _, ok := s.unschedulable["default/gated"]; ok {
		t.Fatal("a gated pod is retried as unschedulable")
	}
	ungated := cache.DeepCopy(st.writes[0])
	ungated.Spec.SchedulingGates = nil
	pods.put(ungated)
	if err := s.sync(ctx, "default/gated"); err != nil {
		t.Fatal(err)
	}
	s.binds.Wait()
	if len(b.binds) != 1 {
		t.Fatalf("binds %v once the gates are gone", b.binds)
	}
}
