package nodelifecycle

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/client/cache/cachetest"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/nodecondition"
)

type fakeAPI struct {
	mu      sync.Mutex
	down    bool
	nodes   []*api.Node
	pods    []*api.Pod
	deleted []string
	evicted []string // deleted gracefully, by taints
}

func (f *fakeAPI) Healthy(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errdefs.ErrUnavailable
	}
	return nil
}

func (f *fakeAPI) GetNode(_ context.Context, name string) (*api.Node, error) {
	return nil, fmt.Errorf("node %s: %w", name, errdefs.ErrNotFound)
}

func (f *fakeAPI) UpdateNodeStatus(_ context.Context, n *api.Node) (*api.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = append(f.nodes, n)
	return n, nil
}

func (f *fakeAPI) UpdatePodStatus(_ context.Context, p *api.Pod) (*api.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = append(f.pods, p)
	return p, nil
}

func (f *fakeAPI) DeletePod(_ context.Context, ns, name, uid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.evicted = append(f.evicted, ns+"/"+name)
	return nil
}

func (f *fakeAPI) ForceDeletePod(_ context.Context, ns, name, uid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, ns+"/"+name)
	return nil
}

func node(name string, hb time.Time) *api.Node {
	return &api.Node{ObjectMeta: api.ObjectMeta{Name: name, ResourceVersion: hb.Format(time.RFC3339Nano)},
		Status: api.NodeStatus{Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue, LastHeartbeatTime: &hb}}}}
}

// observed reports whether the controller has seen the node's heartbeat hb.
func (nc *Controller) observed(name string, hb time.Time) bool {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	return nc.seen[name].heartbeat.Equal(hb)
}

func boundPod(name, node string) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: "uid-" + name, ResourceVersion: "1"},
		Spec: api.PodSpec{NodeName: node}, Status: api.PodStatus{Phase: api.PodRunning,
			Conditions: []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}}}
}

type env struct {
	nc    *Controller
	api   *fakeAPI
	nodes *cachetest.LW[*api.Node]
	clock time.Time
	mu    sync.Mutex
}

func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clock = e.clock.Add(d)
}

func setup(t *testing.T, nodes []*api.Node, pods []*api.Pod) *env {
	t.Helper()
	e := &env{api: &fakeAPI{}, clock: time.Unix(10000, 0),
		nodes: cachetest.NewLW(nodes...)}
	nodeInf := cache.NewInformer[api.Node](e.nodes)
	podInf := cache.NewInformer[api.Pod](cachetest.NewLW(pods...))
	e.nc = newController(e.api, nodeInf, podInf, 20*time.Second)
	e.nc.now = func() time.Time {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.clock
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nodeInf.Start(ctx)
	podInf.Start(ctx)
	if !cache.WaitForSync(ctx, nodeInf, podInf) {
		t.Fatal("informers did not sync")
	}
	return e
}

func TestSilentNodeIsMarkedAndItsPodsRemoved(t *testing.T) {
	start := time.Unix(10000, 0)
	// A DaemonSet's pod tolerates the node's being unreachable for good,
	// and stays; one tolerating it for a while does not.
	daemon, bounded := boundPod("daemon", "n1"), boundPod("bounded", "n1")
	daemon.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	bounded.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
		TolerationSeconds: ptrTo(int64(300))}}
	e := setup(t, []*api.Node{node("n1", start), node("n2", start)},
		[]*api.Pod{boundPod("a", "n1"), boundPod("b", "n1"), boundPod("c", "n2"), daemon, bounded})
	ctx := context.Background()

	e.advance(15 * time.Second)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if len(e.api.nodes) != 0 || len(e.api.deleted) != 0 {
		t.Fatalf("acted within the grace period: %d node writes, deleted %v", len(e.api.nodes), e.api.deleted)
	}

	e.advance(6 * time.Second)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if len(e.api.nodes) != 1 {
		t.Fatalf("%d node status writes, want 1", len(e.api.nodes))
	}
	c := nodecondition.Ready(e.api.nodes[0])
	if c.Status != api.ConditionUnknown || c.Reason != ReasonNodeStatusUnknown || !c.LastHeartbeatTime.Equal(start) {
		t.Fatalf("ready condition %+v: want Unknown/NodeStatusUnknown keeping the last heartbeat", c)
	}
	sort.Strings(e.api.deleted)
	if fmt.Sprint(e.api.deleted) != "[default/a default/b default/bounded]" {
		t.Fatalf("deleted %v, want the pods of n1", e.api.deleted)
	}
	for _, p := range e.api.pods {
		if p.Status.Phase != api.PodFailed || p.Status.Reason != ReasonNodeLost {
			t.Fatalf("pod %s status %s/%s, want Failed/NodeLost", p.Name, p.Status.Phase, p.Status.Reason)
		}
	}
}

// The kubelet comes back and writes Ready=True with a new heartbeat: the
// controller leaves the node alone.
func TestReturningKubeletIsNotFought(t *testing.T) {
	start := time.Unix(10000, 0)
	e := setup(t, []*api.Node{node("n1", start)}, nil)
	ctx := context.Background()
	e.advance(25 * time.Second)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if len(e.api.nodes) != 1 {
		t.Fatalf("%d node writes, want 1", len(e.api.nodes))
	}
	// The informer sees the controller's own write (same heartbeat), then
	// the kubelet's (a new one, on a clock 1h off).
	e.nodes.Events <- client.Event[*api.Node]{Type: api.Modified, Object: e.api.nodes[0]}
	back := node("n1", start.Add(time.Hour))
	e.nodes.Events <- client.Event[*api.Node]{Type: api.Modified, Object: back}
	// Wait for the controller's handler, not the informer's store: the
	// store holds the update before the handler has observed it.
	deadline := time.Now().Add(10 * time.Second)
	for !e.nc.observed("n1", heartbeat(back)) {
		if time.Now().After(deadline) {
			t.Fatal("the controller did not observe the kubelet's update")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		e.advance(5 * time.Second)
		if err := e.nc.sync(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
	}
	if len(e.api.nodes) != 1 {
		t.Fatalf("controller wrote the node again after the kubelet came back: %d writes", len(e.api.nodes))
	}
}

// Pods bound to a node that does not exist are removed.
func TestPodsOfMissingNodeAreRemoved(t *testing.T) {
	e := setup(t, nil, []*api.Pod{boundPod("orphan", "ghost")})
	if err := e.nc.sync(context.Background(), "ghost"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(e.api.deleted) != "[default/orphan]" {
		t.Fatalf("deleted %v", e.api.deleted)
	}
}

// An apiserver outage longer than the grace period fails no node: silence
// counts from when the apiserver answers again.
func TestApiserverOutageFailsNoNode(t *testing.T) {
	start := time.Unix(10000, 0)
	e := setup(t, []*api.Node{node("n1", start)}, []*api.Pod{boundPod("a", "n1")})
	ctx := context.Background()
	e.api.mu.Lock()
	e.api.down = true
	e.api.mu.Unlock()
	e.nc.probe(ctx)
	e.advance(time.Minute)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	e.api.mu.Lock()
	e.api.down = false
	e.api.mu.Unlock()
	e.nc.probe(ctx)
	e.advance(10 * time.Second)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if len(e.api.nodes) != 0 || len(e.api.deleted) != 0 {
		t.Fatalf("acted on a node silenced by the outage: %d node writes, deleted %v", len(e.api.nodes), e.api.deleted)
	}
	// Still silent a whole grace period after the apiserver came back: lost.
	e.advance(11 * time.Second)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if len(e.api.nodes) != 1 || len(e.api.deleted) != 1 {
		t.Fatalf("node silent past the grace after the outage: %d node writes, deleted %v", len(e.api.nodes), e.api.deleted)
	}
}

func ptrTo[T any](v T) *T { return &v }
