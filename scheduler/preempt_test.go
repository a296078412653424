package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
)

type fakeDeleter struct {
	mu      sync.Mutex
	deleted []string
}

func (f *fakeDeleter) DeletePod(_ context.Context, ns, name, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, name)
	return nil
}

func priority(p int32) podOpt { return func(pod *api.Pod) { pod.Spec.Priority = &p } }

func on(node string) podOpt { return func(pod *api.Pod) { pod.Spec.NodeName = node } }

func createdAt(sec int) podOpt {
	return func(pod *api.Pod) {
		t := time.Date(2026, 12, 7, 0, 0, sec, 0, time.UTC)
		pod.CreationTimestamp = &t
	}
}

func TestPreemption(t *testing.T) {
	never := corev1.PreemptNever
	cases := []struct {
		name        string
		nodes       []*api.Node
		placed      []*api.Pod
		pod         *api.Pod
		wantNode    string
		wantDeleted []string
	}{
		{name: "the lower priority pod makes room",
			nodes:  []*api.Node{testNode("a", "1", "1Gi")},
			placed: []*api.Pod{testPod("low", "800m", "", priority(1), on("a"))},
			pod:    testPod("high", "500m", "", priority(10)), wantNode: "a", wantDeleted: []string{"low"}},
		{name: "no pod of lower priority: nothing preempted",
			nodes:  []*api.Node{testNode("a", "1", "1Gi")},
			placed: []*api.Pod{testPod("same", "800m", "", priority(10), on("a"))},
			pod:    testPod("high", "500m", "", priority(10))},
		{name: "PreemptNever preempts nothing",
			nodes:  []*api.Node{testNode("a", "1", "1Gi")},
			placed: []*api.Pod{testPod("low", "800m", "", priority(1), on("a"))},
			pod:    testPod("high", "500m", "", priority(10), func(p *api.Pod) { p.Spec.PreemptionPolicy = &never })},
		{name: "the fewest: the most important spared first",
			nodes: []*api.Node{testNode("a", "1", "1Gi")},
			placed: []*api.Pod{testPod("low-1", "300m", "", priority(1), on("a")), testPod("low-5", "300m", "", priority(5), on("a")),
				testPod("low-3", "300m", "", priority(3), on("a"))},
			pod: testPod("high", "500m", "", priority(10)), wantNode: "a", wantDeleted: []string{"low-1", "low-3"}},
		{name: "the older of equal priority is spared",
			nodes:  []*api.Node{testNode("a", "1", "1Gi")},
			placed: []*api.Pod{testPod("young", "500m", "", priority(1), on("a"), createdAt(9)), testPod("old", "500m", "", priority(1), on("a"), createdAt(1))},
			pod:    testPod("high", "500m", "", priority(10)), wantNode: "a", wantDeleted: []string{"young"}},
		{name: "the node whose victims matter least",
			nodes:  []*api.Node{testNode("a", "1", "1Gi"), testNode("b", "1", "1Gi")},
			placed: []*api.Pod{testPod("mid", "800m", "", priority(5), on("a")), testPod("low", "800m", "", priority(1), on("b"))},
			pod:    testPod("high", "500m", "", priority(10)), wantNode: "b", wantDeleted: []string{"low"}},
		{name: "a node that would not fit even empty is passed over",
			nodes:  []*api.Node{testNode("a", "1", "1Gi")},
			placed: []*api.Pod{testPod("low", "800m", "", priority(1), on("a"))},
			pod:    testPod("huge", "2", "", priority(10))},
		{name: "a node its selector excludes is passed over",
			nodes:  []*api.Node{testNode("a", "1", "1Gi")},
			placed: []*api.Pod{testPod("low", "800m", "", priority(1), on("a"))},
			pod:    testPod("high", "500m", "", priority(10), func(p *api.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "x"} })},
		{name: "a host port held by a lower pod",
			nodes:  []*api.Node{testNode("a", "4", "4Gi")},
			placed: []*api.Pod{testPod("low", "100m", "", priority(1), on("a"), ports(80))},
			pod:    testPod("high", "100m", "", priority(10), ports(80)), wantNode: "a", wantDeleted: []string{"low"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, pods, b, st := newTestScheduler(tc.nodes...)
			del := &fakeDeleter{}
			s.deleter = del
			for _, p := range tc.placed {
				pods.put(p)
				s.cache.setPod(p)
			}
			pods.put(tc.pod)
			s.cache.setPod(tc.pod)
			if err := s.sync(context.Background(), cache.Key(tc.pod)); err != nil {
				t.Fatal(err)
			}
			s.binds.Wait()
			if len(b.binds) > 0 {
				t.Fatalf("bound %v: the pod fits nowhere without preemption", b.binds)
			}
			slices.Sort(del.deleted)
			if !slices.Equal(del.deleted, tc.wantDeleted) {
				t.Errorf("preempted %v, want %v", del.deleted, tc.wantDeleted)
			}
			var nominated string
			for _, w := range st.writes {
				nominated = w.Status.NominatedNodeName
			}
			if nominated != tc.wantNode {
				t.Errorf("nominated to %q, want %q", nominated, tc.wantNode)
			}
		})
	}
}

// While a pod's victims go, the room freed is its own: a pod of lower
// priority does not take it, the pod does not preempt again, and it is
// bound there once they are gone.
func TestNominatedRoomIsKept(t *testing.T) {
	s, pods, b, _ := newTestScheduler(testNode("a", "1", "1Gi"))
	del := &fakeDeleter{}
	s.deleter = del
	ctx := context.Background()
	low := testPod("low", "800m", "", priority(1), on("a"))
	pods.put(low)
	s.cache.setPod(low)
	high := testPod("high", "800m", "", priority(10))
	pods.put(high)
	s.cache.setPod(high)
	if err := s.sync(ctx, cache.Key(high)); err != nil {
		t.Fatal(err)
	}
	// The scheduler's status write, and the victim going, as the watch
	// brings them.
	high = cache.DeepCopy(high)
	high.Status.NominatedNodeName = "a"
	pods.put(high)
	s.cache.setPod(high)
	going := cache.DeepCopy(low)
	now := time.Now()
	going.DeletionTimestamp = &now
	pods.put(going)
	s.cache.setPod(going)
	if err := s.sync(ctx, cache.Key(high)); err != nil {
		t.Fatal(err)
	}
	if len(del.deleted) != 1 {
		t.Fatalf("preempted %v: a pod whose victims are going preempts no more", del.deleted)
	}
	s.cache.deletePod(going)
	mid := testPod("mid", "800m", "", priority(5))
	pods.put(mid)
	s.cache.setPod(mid)
	if err := s.sync(ctx, cache.Key(mid)); err != nil {
		t.Fatal(err)
	}
	s.binds.Wait()
	if len(b.binds) != 0 {
		t.Fatalf("bound %v: the room nominated to high was taken", b.binds)
	}
	if err := s.sync(ctx, cache.Key(high)); err != nil {
		t.Fatal(err)
	}
	s.binds.Wait()
	if !slices.Equal(b.binds, []string{"high->a"}) {
		t.Fatalf("binds %v, want high on a", b.binds)
	}
}
