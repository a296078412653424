package test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/controller"
	"minik8s/controller/nodelifecycle"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/scheduler"
	"minik8s/test/framework"
)

func startControllers(ctx context.Context, t *testing.T, cfg controller.Config) {
	t.Helper()
	done := make(chan error, 1)
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- controller.Run(cctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	})
}

func replicaSet(name string, replicas int32, cpu string) *api.ReplicaSet {
	return &api.ReplicaSet{
		ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: api.PodTemplateSpec{
				ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "busybox",
					Resources: api.ResourceRequirements{Requests: api.ResourceList{api.ResourceCPU: cpu, api.ResourceMemory: "64Mi"}}}}},
			},
		},
	}
}

// ownedPods lists the live (not being deleted) pods a ReplicaSet owns, by node.
func ownedPods(t *testing.T, ctx context.Context, c *client.Client, rs *api.ReplicaSet) (map[string]int, []*api.Pod) {
	t.Helper()
	pods, _, err := c.Pods(rs.Namespace).List(ctx, client.ListOptions{LabelSelector: "app=" + rs.Name})
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string]int{}
	var live []*api.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != rs.UID {
			continue
		}
		byNode[p.Spec.NodeName]++
		live = append(live, p)
	}
	return byNode, live
}

// podWatch follows the pods of a namespace, keeping the largest number of
// live pods seen at once and the statuses pods went through.
type podWatch struct {
	mu      sync.Mutex
	live    map[string]bool
	maxLive int
	lost    map[string]bool
}

func watchPods(ctx context.Context, c *client.Client, ns string) *podWatch {
	w := &podWatch{live: map[string]bool{}, lost: map[string]bool{}}
	events := c.Pods(ns).Watch(ctx, client.ListOptions{})
	go func() {
		for ev := range events {
			p := ev.Object
			w.mu.Lock()
			if ev.Type == api.Deleted || p.DeletionTimestamp != nil || p.Status.Phase == api.PodFailed {
				delete(w.live, p.Name)
			} else {
				w.live[p.Name] = true
			}
			w.maxLive = max(w.maxLive, len(w.live))
			if p.Status.Phase == api.PodFailed && p.Status.Reason == nodelifecycle.ReasonNodeLost {
				w.lost[p.Name] = true
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// waitLive waits until the watch has seen n pods live: the API answering
// a state does not mean the watch has delivered it yet.
func (w *podWatch) waitLive(t *testing.T, n int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("the pod watch to see %d live pods", n), func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.live) == n, fmt.Sprint(len(w.live))
	})
}

func (w *podWatch) resetMax() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.maxLive = len(w.live)
}

func (w *podWatch) max() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxLive
}

func rsStatus(t *testing.T, ctx context.Context, c *client.Client, name string) (*api.ReplicaSet, string) {
	rs, err := c.ReplicaSets("default").Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return rs, fmt.Sprintf("%+v", rs.Status)
}

// A ReplicaSet of six pods with requests spreads over three nodes; one pod
// beyond what fits says why; scaling to 0 and back works; deleting the
// ReplicaSet deletes its pods. The number of live pods never exceeds the
// replicas asked for.
func TestReplicaSetLifecycle(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := srv.Client
	nodes := startSimNodes(ctx, t, c, time.Second)
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		nodes.add(ctx, n, "2", "4Gi", nil)
	}
	w := watchPods(ctx, c, "default")
	startScheduler(ctx, t, scheduler.Config{Client: c})
	startControllers(ctx, t, controller.Config{Client: c})

	// 600m each: three fit on a 2-cpu node.
	rs, err := c.ReplicaSets("default").Create(ctx, replicaSet("web", 6, "600m"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "six ready pods, two per node", func() (bool, string) {
		byNode, _ := ownedPods(t, ctx, c, rs)
		cur, st := rsStatus(t, ctx, c, "web")
		ok := byNode["node-a"] == 2 && byNode["node-b"] == 2 && byNode["node-c"] == 2 &&
			cur.Status.Replicas == 6 && cur.Status.ReadyReplicas == 6 && cur.Status.AvailableReplicas == 6 &&
			cur.Status.ObservedGeneration == cur.Generation
		return ok, fmt.Sprintf("pods by node %v, status %s", byNode, st)
	})
	if m := w.max(); m > 6 {
		t.Fatalf("%d live pods at once for 6 replicas", m)
	}
	_, pods := ownedPods(t, ctx, c, rs)
	name := regexp.MustCompile(`^web-[a-z0-9]{5}$`)
	for _, p := range pods {
		ref := p.OwnerReferences[0]
		if !name.MatchString(p.Name) || ref.Kind != "ReplicaSet" || ref.Name != "web" || ref.Controller == nil || !*ref.Controller {
			t.Fatalf("pod %s with owner %+v", p.Name, ref)
		}
	}

	// Ten replicas: nine fit, the tenth says why not.
	if _, err := c.Scale(ctx, "default", "web", 10); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "nine bound and one unschedulable", func() (bool, string) {
		byNode, pods := ownedPods(t, ctx, c, rs)
		if len(pods) != 10 || byNode[""] != 1 {
			return false, fmt.Sprint(byNode)
		}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				continue
			}
			cond := podCondition(p, api.PodScheduled)
			if cond == nil || cond.Reason != "Unschedulable" || cond.Message != "0/3 nodes are available: 3 Insufficient cpu." {
				return false, fmt.Sprintf("pending pod conditions %+v", p.Status.Conditions)
			}
		}
		return true, ""
	})

	// To zero: the unscheduled pod goes first, then all the others.
	w.resetMax()
	if _, err := c.Scale(ctx, "default", "web", 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "no pods", func() (bool, string) {
		all, _, err := c.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=web"})
		cur, st := rsStatus(t, ctx, c, "web")
		return err == nil && len(all) == 0 && cur.Status.Replicas == 0, fmt.Sprintf("%d pods, status %s", len(all), st)
	})

	// And back.
	w.waitLive(t, 0)
	w.resetMax()
	if _, err := c.Scale(ctx, "default", "web", 3); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "three ready pods again", func() (bool, string) {
		_, pods := ownedPods(t, ctx, c, rs)
		cur, st := rsStatus(t, ctx, c, "web")
		return len(pods) == 3 && cur.Status.ReadyReplicas == 3, st
	})
	if m := w.max(); m > 3 {
		t.Fatalf("%d live pods at once for 3 replicas", m)
	}

	// Deleting the ReplicaSet deletes its pods.
	if _, err := c.ReplicaSets("default").Delete(ctx, "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "pods collected", func() (bool, string) {
		all, _, err := c.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(all) == 0, fmt.Sprintf("%d pods left", len(all))
	})
}

// A ReplicaSet adopts no pod but a claimed warm function pod: another
// pod matching its selector that it does not own is neither counted nor
// deleted.
func TestReplicaSetAdoptsNothing(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := srv.Client
	stray := requestPod("stray", "", "")
	stray.Labels = map[string]string{"app": "solo"}
	if _, err := c.Pods("default").Create(ctx, stray); err != nil {
		t.Fatal(err)
	}
	startControllers(ctx, t, controller.Config{Client: c})
	rs, err := c.ReplicaSets("default").Create(ctx, replicaSet("solo", 2, "100m"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "two owned pods", func() (bool, string) {
		_, pods := ownedPods(t, ctx, c, rs)
		cur, st := rsStatus(t, ctx, c, "solo")
		return len(pods) == 2 && cur.Status.Replicas == 2, st
	})
	if _, err := c.Scale(ctx, "default", "solo", 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "owned pods gone", func() (bool, string) {
		_, pods := ownedPods(t, ctx, c, rs)
		return len(pods) == 0, fmt.Sprint(len(pods))
	})
	if _, err := c.Pods("default").Get(ctx, "stray"); err != nil {
		t.Fatalf("the pod the ReplicaSet does not own: %v", err)
	}
}

func nodeReady(t *testing.T, ctx context.Context, c *client.Client, name string) *api.NodeCondition {
	n, err := c.Nodes().Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == api.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// A node whose heartbeat stops is marked not ready and tainted unreachable
// once its grace period is over; its pods are marked lost, removed and
// recreated elsewhere; when its heartbeat resumes it is Ready again and
// stays so, and the controller takes its taints off.
func TestNodeFailureMovesPods(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := srv.Client
	const grace, heartbeat = 4 * time.Second, 500 * time.Millisecond
	nodes := startSimNodes(ctx, t, c, heartbeat)
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		nodes.add(ctx, n, "4", "4Gi", nil)
	}
	w := watchPods(ctx, c, "default")
	startScheduler(ctx, t, scheduler.Config{Client: c})
	startControllers(ctx, t, controller.Config{Client: c, NodeMonitorGracePeriod: grace})
	rs, err := c.ReplicaSets("default").Create(ctx, replicaSet("svc", 6, "500m"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "two pods per node", func() (bool, string) {
		byNode, _ := ownedPods(t, ctx, c, rs)
		return byNode["node-a"] == 2 && byNode["node-b"] == 2 && byNode["node-c"] == 2, fmt.Sprint(byNode)
	})
	_, before := ownedPods(t, ctx, c, rs)
	var onB []string
	for _, p := range before {
		if p.Spec.NodeName == "node-b" {
			onB = append(onB, p.Name)
		}
	}

	// Not marking a node within its grace period is checked with a fake
	// clock in controller/nodelifecycle; here the outcome is what counts.
	nodes.stop("node-b")
	eventually(t, grace+30*time.Second, "node-b not ready", func() (bool, string) {
		cond := nodeReady(t, ctx, c, "node-b")
		return cond.Status == api.ConditionUnknown && cond.Reason == nodelifecycle.ReasonNodeStatusUnknown, fmt.Sprintf("%+v", cond)
	})
	eventually(t, 60*time.Second, "pods moved to node-a and node-c", func() (bool, string) {
		byNode, pods := ownedPods(t, ctx, c, rs)
		ready := 0
		for _, p := range pods {
			if c := podCondition(p, api.PodReady); c != nil && c.Status == api.ConditionTrue {
				ready++
			}
		}
		return byNode["node-b"] == 0 && byNode["node-a"]+byNode["node-c"] == 6 && ready == 6, fmt.Sprint(byNode)
	})
	for _, name := range onB {
		if _, err := c.Pods("default").Get(ctx, name); !errdefs.IsNotFound(err) {
			t.Fatalf("pod %s of the lost node still exists (err %v)", name, err)
		}
		eventually(t, 30*time.Second, "pod "+name+" seen Failed/NodeLost before its removal", func() (bool, string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.lost[name], ""
		})
	}

	// The lost node carries the unreachable taints, the NoExecute one
	// stamped with when it was added.
	eventually(t, 30*time.Second, "node-b tainted unreachable", func() (bool, string) {
		n, err := c.Nodes().Get(ctx, "node-b")
		if err != nil {
			t.Fatal(err)
		}
		var noSchedule, noExecute bool
		for _, tn := range n.Spec.Taints {
			if tn.Key == corev1.TaintNodeUnreachable {
				noSchedule = noSchedule || tn.Effect == corev1.TaintEffectNoSchedule
				noExecute = noExecute || tn.Effect == corev1.TaintEffectNoExecute && tn.TimeAdded != nil && time.Since(tn.TimeAdded.Time) < time.Minute
			}
		}
		return noSchedule && noExecute, fmt.Sprintf("%+v", n.Spec.Taints)
	})

	nodes.start("node-b")
	eventually(t, 30*time.Second, "node-b ready again", func() (bool, string) {
		cond := nodeReady(t, ctx, c, "node-b")
		return cond.Status == api.ConditionTrue, fmt.Sprintf("%+v", cond)
	})
	// Its kubelet may not touch its taints: the controller takes them off.
	eventually(t, 30*time.Second, "node-b's unreachable taints gone", func() (bool, string) {
		n, err := c.Nodes().Get(ctx, "node-b")
		if err != nil {
			t.Fatal(err)
		}
		return len(n.Spec.Taints) == 0, fmt.Sprintf("%+v", n.Spec.Taints)
	})
	// The controller does not fight the kubelet: Ready stays True.
	for end := time.Now().Add(2 * grace); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if cond := nodeReady(t, ctx, c, "node-b"); cond.Status != api.ConditionTrue {
			t.Fatalf("node-b flipped to %s (%s) while its heartbeat runs", cond.Status, cond.Reason)
		}
	}
}

func endpointsOf(t *testing.T, ctx context.Context, c *client.Client, name string) (*api.Endpoints, bool) {
	ep, err := c.Endpoints("default").Get(ctx, name)
	if errdefs.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return ep, true
}

// addrs renders a subset's addresses as "pod@ip:port" sorted.
func addrs(as []api.EndpointAddress) string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s@%s:%d", a.TargetRef.Name, a.IP, a.Port))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// runPod writes the status a kubelet would for a pod running on node ip
// with its "http" port allocated as port.
func runPod(t *testing.T, ctx context.Context, c *client.Client, name, ip string, port int32, ready bool) {
	t.Helper()
	for {
		p, err := c.Pods("default").Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		st := api.ConditionFalse
		if ready {
			st = api.ConditionTrue
		}
		p.Status.Phase, p.Status.PodIP, p.Status.HostIP = api.PodRunning, ip, ip
		p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: st}}
		p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "c", Ready: ready,
			Ports: []api.ContainerPort{{Name: "http", ContainerPort: port, Protocol: "TCP"}}}}
		_, err = c.Pods("default").UpdateStatus(ctx, p)
		if errdefs.IsConflict(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
}

// Endpoints list ready pods in addresses and others in notReadyAddresses,
// each with the port the pod was given; they follow pod changes and go
// away with the Service. Objects a Service owns are collected with it.
func TestEndpointsFollowPods(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := srv.Client
	// The pods are bound to nodes that do not exist: leave out the node
	// lifecycle controller, which would remove them.
	startControllers(ctx, t, controller.Config{Client: c, Controllers: []string{"endpoints", "garbagecollector"}})
	svc, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: "http"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"w1", "w2", "w3"} {
		p := requestPod(n, "", "")
		p.Labels = map[string]string{"app": "web"}
		p.Spec.NodeName = fmt.Sprintf("node-%d", i)
		p.Spec.Containers[0].Ports = []api.ContainerPort{{Name: "http"}}
		if _, err := c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	other := requestPod("other", "", "")
	other.Labels = map[string]string{"app": "db"}
	if _, err := c.Pods("default").Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	runPod(t, ctx, c, "w1", "10.42.0.11", 30001, true)
	runPod(t, ctx, c, "w2", "10.42.0.12", 30002, true)
	runPod(t, ctx, c, "w3", "10.42.0.11", 30003, false)
	runPod(t, ctx, c, "other", "10.42.0.13", 30004, true)

	check := func(what, ready, notReady string) {
		t.Helper()
		eventually(t, 30*time.Second, what, func() (bool, string) {
			ep, ok := endpointsOf(t, ctx, c, "web")
			if !ok {
				return false, "no endpoints"
			}
			if ready == "[]" && notReady == "[]" {
				return len(ep.Subsets) == 0, fmt.Sprintf("%+v", ep.Subsets)
			}
			if len(ep.Subsets) != 1 {
				return false, fmt.Sprintf("%+v", ep.Subsets)
			}
			s := ep.Subsets[0]
			portOK := len(s.Ports) == 1 && s.Ports[0].Name == "http" && s.Ports[0].Port == 80
			return portOK && addrs(s.Addresses) == ready && addrs(s.NotReadyAddresses) == notReady,
				fmt.Sprintf("ready %s, not ready %s, ports %+v", addrs(s.Addresses), addrs(s.NotReadyAddresses), s.Ports)
		})
	}
	check("endpoints of w1, w2 ready and w3 not ready",
		"[w1@10.42.0.11:30001 w2@10.42.0.12:30002]", "[w3@10.42.0.11:30003]")
	ep, _ := endpointsOf(t, ctx, c, "web")
	a := ep.Subsets[0].Addresses[0]
	if a.NodeName == "" || a.TargetRef == nil || a.TargetRef.Kind != "Pod" || a.TargetRef.UID == "" {
		t.Fatalf("address %+v lacks node or target", a)
	}
	if len(ep.OwnerReferences) != 1 || ep.OwnerReferences[0].UID != svc.UID {
		t.Fatalf("endpoints owner %+v", ep.OwnerReferences)
	}

	runPod(t, ctx, c, "w3", "10.42.0.11", 30003, true)
	runPod(t, ctx, c, "w1", "10.42.0.11", 30001, false)
	check("readiness changes followed", "[w2@10.42.0.12:30002 w3@10.42.0.11:30003]", "[w1@10.42.0.11:30001]")

	zero := int64(0)
	if _, err := c.Pods("default").Delete(ctx, "w2", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	check("deleted pod removed", "[w3@10.42.0.11:30003]", "[w1@10.42.0.11:30001]")

	// A hand edit is repaired.
	ep, _ = endpointsOf(t, ctx, c, "web")
	ep.Subsets = nil
	if _, err := c.Endpoints("default").Update(ctx, ep); err != nil {
		t.Fatal(err)
	}
	check("hand edit repaired", "[w3@10.42.0.11:30003]", "[w1@10.42.0.11:30001]")

	// Something else the Service owns, collected with it.
	yes := true
	if _, err := c.ConfigMaps("default").Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "web-conf",
		OwnerReferences: []api.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: svc.UID, Controller: &yes}}},
		Data: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Services("default").Delete(ctx, "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "endpoints and configmap deleted with the service", func() (bool, string) {
		_, epLeft := endpointsOf(t, ctx, c, "web")
		_, err := c.ConfigMaps("default").Get(ctx, "web-conf")
		return !epLeft && errdefs.IsNotFound(err), fmt.Sprintf("endpoints left %v, configmap %v", epLeft, err)
	})
}

// Endpoints written by hand for a Service without selector are left alone.
func TestEndpointsWithoutSelectorAreLeftAlone(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := srv.Client
	startControllers(ctx, t, controller.Config{Client: c})
	if _, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "ext"},
		Spec: api.ServiceSpec{Ports: []api.ServicePort{{Port: 80}}}}); err != nil {
		t.Fatal(err)
	}
	manual := &api.Endpoints{ObjectMeta: api.ObjectMeta{Name: "ext"}, Subsets: []api.EndpointSubset{{
		Addresses: []api.EndpointAddress{{IP: "192.0.2.50", Port: 8080}}, Ports: []api.EndpointPort{{Port: 80}}}}}
	if _, err := c.Endpoints("default").Create(ctx, manual); err != nil {
		t.Fatal(err)
	}
	// A Service with a selector, created after: once its Endpoints appear,
	// the controllers have seen "ext" too.
	if _, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "probe"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "none"}, Ports: []api.ServicePort{{Port: 80}}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "endpoints of the probe service", func() (bool, string) {
		_, ok := endpointsOf(t, ctx, c, "probe")
		return ok, ""
	})
	ep, ok := endpointsOf(t, ctx, c, "ext")
	if !ok || len(ep.Subsets) != 1 || addrsNoRef(ep.Subsets[0].Addresses) != "[192.0.2.50:8080]" {
		t.Fatalf("hand-written endpoints changed: %+v", ep)
	}
	for _, name := range []string{"ext", "probe"} {
		if _, err := c.Services("default").Delete(ctx, name, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "endpoints of the probe service gone", func() (bool, string) {
		_, ok := endpointsOf(t, ctx, c, "probe")
		return !ok, ""
	})
	if _, ok := endpointsOf(t, ctx, c, "ext"); !ok {
		t.Fatal("hand-written endpoints were deleted with their service")
	}
}

func addrsNoRef(as []api.EndpointAddress) string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s:%d", a.IP, a.Port))
	}
	return fmt.Sprint(out)
}

// An apiserver outage longer than the grace period stops every heartbeat,
// yet fails no node: the controller counts silence only while it can
// reach the apiserver.
func TestAPIServerOutageFailsNoNode(t *testing.T) {
	t.Parallel() // it mostly waits, on an apiserver and simulated nodes of its own
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := srv.Client
	// Long enough that the kubelet's first post after the outage (a third
	// of it, then up to one 500 ms tick) lands well inside it under load.
	const grace = 6 * time.Second
	nodes := startSimNodes(ctx, t, c, 500*time.Millisecond)
	nodes.add(ctx, "node-a", "4", "4Gi", nil)
	startScheduler(ctx, t, scheduler.Config{Client: c})
	startControllers(ctx, t, controller.Config{Client: c, NodeMonitorGracePeriod: grace})
	rs, err := c.ReplicaSets("default").Create(ctx, replicaSet("keep", 2, "100m"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "two pods on node-a", func() (bool, string) {
		byNode, _ := ownedPods(t, ctx, c, rs)
		return byNode["node-a"] == 2, fmt.Sprint(byNode)
	})
	_, before := ownedPods(t, ctx, c, rs)

	// The kubelet cannot post during the outage, and posts next a while
	// after the apiserver is back.
	nodes.stop("node-a")
	srv.Stop()
	time.Sleep(2 * grace)
	srv.Start()
	time.Sleep(grace / 3)
	nodes.start("node-a")

	for end := time.Now().Add(2 * grace); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if cond := nodeReady(t, ctx, c, "node-a"); cond.Status != api.ConditionTrue {
			t.Fatalf("node-a became %s (%s) because of the apiserver outage", cond.Status, cond.Reason)
		}
	}
	for _, p := range before {
		if _, err := c.Pods("default").Get(ctx, p.Name); err != nil {
			t.Fatalf("pod %s lost to the apiserver outage: %v", p.Name, err)
		}
	}
}
