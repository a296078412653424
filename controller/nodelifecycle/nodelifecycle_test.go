package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	writes  int
	nodes   []*api.Node // status writes
	specs   []*api.Node // spec writes (taints)
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

// written gives a written node a new resourceVersion, as the apiserver does.
func (f *fakeAPI) written(n *api.Node) *api.Node {
	f.writes++
	n = cache.DeepCopy(n)
	n.ResourceVersion = fmt.Sprintf("w%d", f.writes)
	return n
}

func (f *fakeAPI) UpdateNode(_ context.Context, n *api.Node) (*api.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n = f.written(n)
	f.specs = append(f.specs, n)
	return n, nil
}

func (f *fakeAPI) UpdateNodeStatus(_ context.Context, n *api.Node) (*api.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n = f.written(n)
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

// feed hands n to the node informer, as the watch would, and waits until
// the controller's cache holds it.
func (e *env) feed(t *testing.T, n *api.Node) {
	t.Helper()
	e.nodes.Events <- client.Event[*api.Node]{Type: api.Modified, Object: n}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got, ok := e.nc.nodes.Get("", n.Name); ok && got.ResourceVersion == n.ResourceVersion {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache did not get node %s at %s", n.Name, n.ResourceVersion)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSilentNodeIsMarkedAndItsPodsRemoved: a node silent past its grace
// period is marked Ready=Unknown and tainted unreachable; the pods that do
// not tolerate that are marked lost and removed at once, one tolerating it
// for 300 s once they have passed, a DaemonSet's (tolerating it for good)
// never. When its kubelet writes Ready=True again the taints go, an
// admin's staying.
func TestSilentNodeIsMarkedAndItsPodsRemoved(t *testing.T) {
	start := time.Unix(10000, 0)
	daemon, bounded := boundPod("daemon", "n1"), boundPod("bounded", "n1")
	daemon.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	bounded.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
		TolerationSeconds: ptrTo(int64(300))}}
	n1 := node("n1", start)
	admin := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	n1.Spec.Taints = []corev1.Taint{admin}
	e := setup(t, []*api.Node{n1, node("n2", start)},
		[]*api.Pod{boundPod("a", "n1"), boundPod("b", "n1"), boundPod("c", "n2"), daemon, bounded})
	ctx := context.Background()
	deleted := func() string {
		e.api.mu.Lock()
		defer e.api.mu.Unlock()
		return fmt.Sprint(slices.Sorted(slices.Values(e.api.deleted)))
	}

	e.advance(15 * time.Second)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if len(e.api.nodes) != 0 || len(e.api.specs) != 0 || len(e.api.deleted) != 0 {
		t.Fatalf("acted within the grace period: %d status and %d spec writes, deleted %v", len(e.api.nodes), len(e.api.specs), e.api.deleted)
	}

	e.advance(6 * time.Second)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if len(e.api.nodes) != 1 || len(e.api.specs) != 1 {
		t.Fatalf("%d node status and %d spec writes, want 1 each", len(e.api.nodes), len(e.api.specs))
	}
	c := nodecondition.Ready(e.api.nodes[0])
	if c.Status != api.ConditionUnknown || c.Reason != ReasonNodeStatusUnknown || !c.LastHeartbeatTime.Equal(start) {
		t.Fatalf("ready condition %+v: want Unknown/NodeStatusUnknown keeping the last heartbeat", c)
	}
	tainted := e.api.specs[0]
	if tainted.ResourceVersion != "w2" || nodecondition.ReadyStatus(tainted) != api.ConditionUnknown {
		t.Fatalf("taints written on version %s (Ready %s), want on the status write's", tainted.ResourceVersion, nodecondition.ReadyStatus(tainted))
	}
	lostAt := metav1.NewTime(e.nc.now())
	want := []corev1.Taint{admin, {Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &lostAt}}
	if !equality.Semantic.DeepEqual(tainted.Spec.Taints, want) {
		t.Fatalf("taints %+v, want %+v", tainted.Spec.Taints, want)
	}
	if got := deleted(); got != "[default/a default/b]" {
		t.Fatalf("deleted %v, want the pods of n1 that do not tolerate its being unreachable", got)
	}
	for _, p := range e.api.pods {
		if p.Status.Phase != api.PodFailed || p.Status.Reason != ReasonNodeLost {
			t.Fatalf("pod %s status %s/%s, want Failed/NodeLost", p.Name, p.Status.Phase, p.Status.Reason)
		}
	}

	// The tainted node comes back through the watch; 300 s after the
	// taint the pod tolerating it that long goes too.
	e.feed(t, tainted)
	e.advance(299 * time.Second)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := deleted(); got != "[default/a default/a default/b default/b]" {
		t.Fatalf("after 299 s: deleted %v, want a and b again (the cache has not seen them go) and not bounded", got)
	}
	e.advance(time.Second)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := deleted(); !strings.Contains(got, "default/bounded") || strings.Contains(got, "daemon") {
		t.Fatalf("after 300 s: deleted %v, want bounded and not daemon", got)
	}
	if len(e.api.nodes) != 1 || len(e.api.specs) != 1 {
		t.Fatalf("%d node status and %d spec writes while Unknown, want no more", len(e.api.nodes), len(e.api.specs))
	}

	// The kubelet posts Ready=True (keeping the taints: it may not touch
	// them): the controller takes its own off.
	back := node("n1", e.nc.now())
	back.Spec.Taints = tainted.Spec.Taints
	e.feed(t, back)
	if err := e.nc.sync(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if len(e.api.specs) != 2 || !equality.Semantic.DeepEqual(e.api.specs[1].Spec.Taints, []corev1.Taint{admin}) {
		t.Fatalf("spec writes %d, taints %+v: want the admin's taint alone", len(e.api.specs), e.api.specs[len(e.api.specs)-1].Spec.Taints)
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
