package test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/scheduler"
	"minik8s/test/framework"
)

// simNodes stands in for kubelets: it registers nodes, renews their Ready
// heartbeat every interval (as a kubelet does) unless a node is stopped,
// and, for pods bound to a running node, writes the status a kubelet
// would (Running, Ready, podIP) and finishes their graceful deletion.
type simNodes struct {
	t        *testing.T
	c        *client.Client
	interval time.Duration

	mu      sync.Mutex
	ips     map[string]string
	stopped map[string]bool
}

func startSimNodes(ctx context.Context, t *testing.T, c *client.Client, interval time.Duration) *simNodes {
	s := &simNodes{t: t, c: c, interval: interval, ips: map[string]string{}, stopped: map[string]bool{}}
	go s.heartbeats(ctx)
	go s.kubelet(ctx)
	return s
}

// add registers a Ready node with that capacity.
func (s *simNodes) add(ctx context.Context, name, cpu, mem string, lbls map[string]string) {
	s.t.Helper()
	s.mu.Lock()
	ip := fmt.Sprintf("127.0.0.%d", 11+len(s.ips))
	s.ips[name] = ip
	s.mu.Unlock()
	now := time.Now().UTC()
	n := &api.Node{
		ObjectMeta: api.ObjectMeta{Name: name, Labels: lbls},
		Status: api.NodeStatus{
			Capacity:    api.ResourceList{api.ResourceCPU: cpu, api.ResourceMemory: mem, api.ResourcePods: "110"},
			Allocatable: api.ResourceList{api.ResourceCPU: cpu, api.ResourceMemory: mem, api.ResourcePods: "110"},
			Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: &now, LastTransitionTime: &now}},
			Addresses: []api.NodeAddress{{Type: api.NodeInternalIP, Address: ip}},
		},
	}
	if _, err := s.c.Nodes().Create(ctx, n); err != nil {
		s.t.Fatalf("registering node %s: %v", name, err)
	}
}

// stop stops a node's heartbeats and pod handling, as a dead kubelet would.
func (s *simNodes) stop(name string) { s.setStopped(name, true) }

// start resumes them.
func (s *simNodes) start(name string) { s.setStopped(name, false) }

func (s *simNodes) setStopped(name string, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped[name] = v
}

func (s *simNodes) running(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ip, ok := s.ips[name]
	return ip, ok && !s.stopped[name]
}

func (s *simNodes) heartbeats(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		var names []string
		for n := range s.ips {
			if !s.stopped[n] {
				names = append(names, n)
			}
		}
		s.mu.Unlock()
		for _, name := range names {
			s.heartbeat(ctx, name)
		}
	}
}

// heartbeat writes Ready=True with a fresh heartbeat, as the kubelet does.
func (s *simNodes) heartbeat(ctx context.Context, name string) {
	for ctx.Err() == nil {
		n, err := s.c.Nodes().Get(ctx, name)
		if err != nil {
			return
		}
		now := time.Now().UTC()
		for i := range n.Status.Conditions {
			c := &n.Status.Conditions[i]
			if c.Type != api.NodeReady {
				continue
			}
			if c.Status != api.ConditionTrue {
				c.LastTransitionTime = &now
			}
			c.Status, c.Reason, c.Message, c.LastHeartbeatTime = api.ConditionTrue, "KubeletReady", "", &now
		}
		_, err = s.c.Nodes().UpdateStatus(ctx, n)
		if !errdefs.IsConflict(err) {
			return
		}
	}
}

// kubelet makes pods bound to running nodes Running and Ready, and removes
// pods being deleted from them.
func (s *simNodes) kubelet(ctx context.Context) {
	pods := s.c.Pods("").AllNamespaces()
	for ev := range pods.Watch(ctx, client.ListOptions{}) {
		if ev.Type == api.Deleted {
			continue
		}
		s.handlePod(ctx, ev.Object)
	}
}

func (s *simNodes) handlePod(ctx context.Context, p *api.Pod) {
	ip, ok := s.running(p.Spec.NodeName)
	if !ok {
		return
	}
	pods := s.c.Pods(p.Namespace)
	if p.DeletionTimestamp != nil {
		zero := int64(0)
		_, _ = pods.Delete(ctx, p.Name, client.DeleteOptions{GracePeriodSeconds: &zero, UID: p.UID})
		return
	}
	if p.Status.Phase != api.PodPending {
		return
	}
	now := time.Now().UTC()
	p.Status.Phase = api.PodRunning
	p.Status.HostIP, p.Status.PodIP, p.Status.StartTime = ip, ip, &now
	p.Status.Conditions = append(p.Status.Conditions, api.PodCondition{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: &now})
	_, _ = pods.UpdateStatus(ctx, p)
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func requestPod(name, cpu, mem string) *api.Pod {
	req := api.ResourceList{}
	if cpu != "" {
		req[api.ResourceCPU] = cpu
	}
	if mem != "" {
		req[api.ResourceMemory] = mem
	}
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Labels: map[string]string{"app": "sched"}},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "busybox",
			Resources: api.ResourceRequirements{Requests: req}}}}}
}

func startScheduler(ctx context.Context, t *testing.T, cfg scheduler.Config) {
	t.Helper()
	done := make(chan error, 1)
	sctx, cancel := context.WithCancel(ctx)
	go func() { done <- scheduler.Run(sctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("scheduler: %v", err)
		}
	})
}

func podsByNode(t *testing.T, ctx context.Context, c *client.Client, ns string) (map[string][]string, []*api.Pod) {
	t.Helper()
	pods, _, err := c.Pods(ns).List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range pods {
		out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p.Name)
	}
	return out, pods
}

func podCondition(p *api.Pod, typ string) *api.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Six pods with requests spread over three nodes; one that fits nowhere
// says why, and is placed once a node that fits it appears.
func TestSchedulerSpreadsAndExplains(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := startSimNodes(ctx, t, srv.Client, time.Second)
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		nodes.add(ctx, n, "2", "2Gi", map[string]string{"zone": "z1"})
	}
	startScheduler(ctx, t, scheduler.Config{Client: srv.Client})
	pods := srv.Client.Pods("default")
	for i := 0; i < 6; i++ {
		if _, err := pods.Create(ctx, requestPod(fmt.Sprintf("web-%d", i), "500m", "256Mi")); err != nil {
			t.Fatal(err)
		}
	}
	big := requestPod("big", "3", "")
	if _, err := pods.Create(ctx, big); err != nil {
		t.Fatal(err)
	}
	picky := requestPod("picky", "100m", "")
	picky.Spec.NodeSelector = map[string]string{"zone": "z2"}
	if _, err := pods.Create(ctx, picky); err != nil {
		t.Fatal(err)
	}

	eventually(t, 30*time.Second, "six pods bound, two per node", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		for _, n := range []string{"node-a", "node-b", "node-c"} {
			if len(byNode[n]) != 2 {
				return false, fmt.Sprint(byNode)
			}
		}
		return true, ""
	})
	wantMsg := map[string]string{
		"big":   "0/3 nodes are available: 3 Insufficient cpu.",
		"picky": "0/3 nodes are available: 3 node(s) didn't match node selector.",
	}
	for name, want := range wantMsg {
		eventually(t, 30*time.Second, name+" marked unschedulable", func() (bool, string) {
			p, err := pods.Get(ctx, name)
			if err != nil {
				return false, err.Error()
			}
			c := podCondition(p, api.PodScheduled)
			if p.Spec.NodeName != "" {
				t.Fatalf("%s was bound to %s", name, p.Spec.NodeName)
			}
			if c == nil || c.Status != api.ConditionFalse || c.Reason != "Unschedulable" || c.Message != want {
				return false, fmt.Sprintf("%+v", p.Status.Conditions)
			}
			return true, ""
		})
	}

	// A node big enough in zone z2 lets both in, without anything else changing.
	nodes.add(ctx, "node-big", "8", "8Gi", map[string]string{"zone": "z2"})
	eventually(t, 30*time.Second, "big and picky bound to the new node", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return len(byNode["node-big"]) == 2, fmt.Sprint(byNode)
	})
	p, _ := pods.Get(ctx, "big")
	if c := podCondition(p, api.PodScheduled); c == nil || c.Status != api.ConditionTrue {
		t.Fatalf("bound pod's PodScheduled condition: %+v", c)
	}
}

// Freed resources let a waiting pod in.
func TestSchedulerRetriesWhenResourcesFree(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := startSimNodes(ctx, t, srv.Client, time.Second)
	nodes.add(ctx, "only", "1", "1Gi", nil)
	startScheduler(ctx, t, scheduler.Config{Client: srv.Client, Policy: scheduler.PolicyRoundRobin})
	pods := srv.Client.Pods("default")
	if _, err := pods.Create(ctx, requestPod("first", "800m", "")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "first bound", func() (bool, string) {
		p, err := pods.Get(ctx, "first")
		return err == nil && p.Spec.NodeName == "only", fmt.Sprint(err)
	})
	if _, err := pods.Create(ctx, requestPod("second", "800m", "")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "second unschedulable", func() (bool, string) {
		p, _ := pods.Get(ctx, "second")
		c := podCondition(p, api.PodScheduled)
		return c != nil && c.Reason == "Unschedulable", fmt.Sprintf("%+v", p.Status)
	})
	// The simulated kubelet finishes the graceful deletion.
	if _, err := pods.Delete(ctx, "first", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "second bound once first is gone", func() (bool, string) {
		p, _ := pods.Get(ctx, "second")
		return p.Spec.NodeName == "only", fmt.Sprintf("%+v", p.Status)
	})
}

func TestRoundRobinPolicy(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := startSimNodes(ctx, t, srv.Client, time.Second)
	for _, n := range []string{"n1", "n2", "n3"} {
		nodes.add(ctx, n, "64", "64Gi", nil)
	}
	// Load on n1 would steer least-allocated away from it; round-robin
	// takes the nodes in turn regardless.
	pods := srv.Client.Pods("default")
	if _, err := pods.Create(ctx, requestPod("heavy", "48", "48Gi")); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.Bind(ctx, "default", "heavy", "", "n1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 9; i++ {
		if _, err := pods.Create(ctx, requestPod(fmt.Sprintf("rr-%d", i), "", "")); err != nil {
			t.Fatal(err)
		}
	}
	startScheduler(ctx, t, scheduler.Config{Client: srv.Client, Policy: scheduler.PolicyRoundRobin})
	eventually(t, 30*time.Second, "three new pods per node", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return len(byNode["n1"]) == 4 && len(byNode["n2"]) == 3 && len(byNode["n3"]) == 3, fmt.Sprint(byNode)
	})
}

// bindGate orders two schedulers' attempts at one pod: the loser tries
// first and waits, the winner binds once the loser is trying, and the
// loser's attempt then reaches the apiserver, which must refuse it. Both
// try while the pod is unbound in their caches, as in a real race, but
// the outcome is fixed. The waits are bounded, so a scheduler that never
// tries does not hang the other: it only fails the test.
type bindGate struct {
	attempted, bound       chan struct{}
	attemptOnce, boundOnce sync.Once
}

func newBindGate() *bindGate {
	return &bindGate{attempted: make(chan struct{}), bound: make(chan struct{})}
}

const bindGateWait = 30 * time.Second // both schedulers reach a pod within it, even on busy cores

// countingBinder records every binding attempt of a scheduler, by pod.
type countingBinder struct {
	next scheduler.Binder
	// win and lose: the gated pods this scheduler must bind and must be
	// refused.
	win, lose map[string]*bindGate

	mu      sync.Mutex
	bound   map[string]int
	refused map[string]int
}

func newCountingBinder(next scheduler.Binder) *countingBinder {
	return &countingBinder{next: next, win: map[string]*bindGate{}, lose: map[string]*bindGate{},
		bound: map[string]int{}, refused: map[string]int{}}
}

func (b *countingBinder) Bind(ctx context.Context, ns, pod, uid, node string) error {
	key := ns + "/" + pod
	if g := b.lose[key]; g != nil {
		g.attemptOnce.Do(func() { close(g.attempted) })
		select {
		case <-g.bound:
		case <-time.After(bindGateWait):
		case <-ctx.Done():
		}
	}
	if g := b.win[key]; g != nil {
		select {
		case <-g.attempted:
		case <-time.After(bindGateWait):
		case <-ctx.Done():
		}
	}
	err := b.next.Bind(ctx, ns, pod, uid, node)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == nil:
		b.bound[key]++
		if g := b.win[key]; g != nil {
			g.boundOnce.Do(func() { close(g.bound) })
		}
	case errors.Is(err, errdefs.ErrConflict):
		b.refused[key]++
	}
	return err
}

// Two schedulers at once: every pod is bound exactly once, both schedulers
// bind, a scheduler that tries a pod the other has just bound is refused,
// and no pod's node ever changes once set.
func TestTwoSchedulersNeverDoubleBind(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := startSimNodes(ctx, t, srv.Client, time.Second)
	for i := 0; i < 5; i++ {
		nodes.add(ctx, fmt.Sprintf("n%d", i), "16", "16Gi", nil)
	}
	const n = 50
	pods := srv.Client.Pods("default")

	// Watch every change of every pod: a pod's node, once set, must never change.
	var wmu sync.Mutex
	nodeOf := map[string]string{}
	var moved []string
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	events := pods.Watch(wctx, client.ListOptions{})
	go func() {
		for ev := range events {
			wmu.Lock()
			if prev := nodeOf[ev.Object.Name]; prev != "" && ev.Object.Spec.NodeName != prev {
				moved = append(moved, fmt.Sprintf("%s: %s -> %s", ev.Object.Name, prev, ev.Object.Spec.NodeName))
			}
			if ev.Object.Spec.NodeName != "" {
				nodeOf[ev.Object.Name] = ev.Object.Spec.NodeName
			}
			wmu.Unlock()
		}
	}()

	// p00-p29 are a free race. p30-p39 are scheduler 1's to bind and
	// scheduler 2's to be refused, p40-p49 the other way round, so that each
	// scheduler has pods that only it can bind: one that binds nothing (or
	// binds what the other already did) fails the test.
	b1 := newCountingBinder(srv.Client)
	b2 := newCountingBinder(srv.Client)
	type gated struct {
		key           string
		winner, loser *countingBinder
	}
	var gates []gated
	for i := 30; i < n; i++ {
		key := fmt.Sprintf("default/p%02d", i)
		g := newBindGate()
		w, l := b1, b2
		if i >= 40 {
			w, l = b2, b1
		}
		w.win[key], l.lose[key] = g, g
		gates = append(gates, gated{key, w, l})
	}
	name := map[*countingBinder]string{b1: "scheduler 1", b2: "scheduler 2"}
	// Enough bind workers that the gated bindings waiting never starve the others.
	startScheduler(ctx, t, scheduler.Config{Client: srv.Client, Binder: b1, BindWorkers: 2 * n})
	startScheduler(ctx, t, scheduler.Config{Client: client.New(srv.URL), Binder: b2, BindWorkers: 2 * n,
		Policy: scheduler.PolicyRoundRobin})

	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := pods.Create(ctx, requestPod(fmt.Sprintf("p%02d", i), "100m", "")); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	eventually(t, 60*time.Second, "all pods bound", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return len(byNode[""]) == 0, fmt.Sprintf("unbound: %v", byNode[""])
	})
	eventually(t, 30*time.Second, "the watch to see every binding", func() (bool, string) {
		wmu.Lock()
		defer wmu.Unlock()
		return len(nodeOf) == n, fmt.Sprintf("%d seen", len(nodeOf))
	})
	// A working loser tries every gated pod; give its attempts time to be
	// answered (one that never tries is reported below).
	for deadline := time.Now().Add(2 * bindGateWait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		answered := true
		for _, g := range gates {
			g.loser.mu.Lock()
			answered = answered && g.loser.refused[g.key]+g.loser.bound[g.key] > 0
			g.loser.mu.Unlock()
		}
		if answered {
			break
		}
	}
	// Let any other binding still in flight finish.
	time.Sleep(500 * time.Millisecond)

	b1.mu.Lock()
	b2.mu.Lock()
	defer b1.mu.Unlock()
	defer b2.mu.Unlock()
	var bad []string
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("default/p%02d", i)
		if got := b1.bound[key] + b2.bound[key]; got != 1 {
			bad = append(bad, fmt.Sprintf("%s bound %d times", key, got))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("pods not bound exactly once: %s", strings.Join(bad, "; "))
	}
	for _, b := range []*countingBinder{b1, b2} {
		if len(b.bound) == 0 {
			t.Errorf("%s bound no pod", name[b])
		}
	}
	for _, g := range gates {
		if g.winner.bound[g.key] != 1 {
			t.Errorf("%s: %s, which tried second, did not bind it", g.key, name[g.winner])
		}
		switch {
		case g.loser.refused[g.key] > 0:
		case g.loser.bound[g.key] == 0:
			t.Errorf("%s: %s never tried to bind it", g.key, name[g.loser])
		default:
			t.Errorf("%s: %s bound it, where %s should have and it should have been refused", g.key, name[g.loser], name[g.winner])
		}
	}
	wmu.Lock()
	defer wmu.Unlock()
	if len(moved) > 0 {
		t.Fatalf("pods moved between nodes: %v", moved)
	}
	var refused int
	for _, b := range []*countingBinder{b1, b2} {
		for _, r := range b.refused {
			refused += r
		}
	}
	t.Logf("scheduler 1 bound %d, scheduler 2 bound %d; %d bindings refused as already bound",
		len(b1.bound), len(b2.bound), refused)
}

// TestSchedulerAffinityAndGates: a pod's required node affinity, judged by
// Kubernetes' own matcher, takes it to the one node that matches; a pod
// with scheduling gates waits, saying why, until an update takes them
// away, and is then placed.
func TestSchedulerAffinityAndGates(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodes := startSimNodes(ctx, t, srv.Client, time.Second)
	nodes.add(ctx, "node-a", "2", "2Gi", map[string]string{"zone": "z1"})
	nodes.add(ctx, "node-b", "2", "2Gi", map[string]string{"zone": "z2"})
	startScheduler(ctx, t, scheduler.Config{Client: srv.Client})
	pods := srv.Client.Pods("default")
	for i := 0; i < 3; i++ {
		p := requestPod(fmt.Sprintf("z2-%d", i), "100m", "")
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"z1"}}}}}}}}
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	gated := requestPod("gated", "100m", "")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/approval"}}
	if _, err := pods.Create(ctx, gated); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the affine pods on node-b", func() (bool, string) {
		byNode, _ := podsByNode(t, ctx, srv.Client, "default")
		return len(byNode["node-b"]) == 3 && len(byNode["node-a"]) == 0, fmt.Sprint(byNode)
	})
	eventually(t, 30*time.Second, "the gated pod said to wait", func() (bool, string) {
		p, _ := pods.Get(ctx, "gated")
		c := podCondition(p, api.PodScheduled)
		return c != nil && c.Reason == "SchedulingGated" && p.Spec.NodeName == "", fmt.Sprintf("%+v", p.Status)
	})
	// Nor may anyone bind it meanwhile.
	if err := srv.Client.Bind(ctx, "default", "gated", "", "node-a"); !errdefs.IsConflict(err) {
		t.Errorf("binding a gated pod: %v, want 409", err)
	}
	p, err := pods.Get(ctx, "gated")
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.SchedulingGates = nil
	if _, err := pods.Update(ctx, p); err != nil {
		t.Fatalf("taking the gates away: %v", err)
	}
	eventually(t, 30*time.Second, "the ungated pod placed", func() (bool, string) {
		p, _ := pods.Get(ctx, "gated")
		return p.Spec.NodeName != "", fmt.Sprintf("%+v", p.Status)
	})
}
