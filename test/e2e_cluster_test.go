package test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// webReplicaSet serves HTTP with python on an allocated port, ready when
// it answers.
func webReplicaSet(replicas int32) *api.ReplicaSet {
	labels := map[string]string{"app": "web"}
	return &api.ReplicaSet{
		ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ReplicaSetSpec{Replicas: &replicas, Selector: &api.LabelSelector{MatchLabels: labels},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: labels}, Spec: api.PodSpec{
				Containers: []api.Container{{
					Name: "web", Image: containerdtest.PythonRuntimeImage,
					Command:   []string{"sh", "-c", `exec python3 -m http.server "$PORT" --bind "$HOST"`},
					Ports:     []api.ContainerPort{{Name: "http"}},
					Resources: api.ResourceRequirements{Requests: api.ResourceList{"cpu": "100m", "memory": "32Mi"}},
					ReadinessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/", Port: "http"},
						PeriodSeconds: 1, FailureThreshold: 1},
				}},
			}}},
	}
}

// readyPodsByNode counts the ready, not terminating pods of app=web per node.
func readyPodsByNode(t *testing.T, c *client.Client) map[string]int {
	pods, _, err := c.Pods("default").List(context.Background(), client.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods {
		if p.DeletionTimestamp == nil && podReady(p) {
			out[p.Spec.NodeName]++
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestE2EClusterSpreadFailoverAndService(t *testing.T) {
	t.Parallel() // mostly waiting for a node to be judged dead, on loopback addresses no other parallel test uses
	const grace = 8 * time.Second
	cl := framework.StartCluster(t, controller.Config{NodeMonitorGracePeriod: grace}, "node", 3, 10)
	ctd, s, kubelets := cl.Containerd, cl.APIServer, cl.Kubelets
	ctd.ImportFunctionRuntime(t)
	ctx := context.Background()
	c := s.Client
	if _, err := c.ReplicaSets("default").Create(ctx, webReplicaSet(6)); err != nil {
		t.Fatal(err)
	}
	svc, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []api.ServicePort{{Port: 8080, TargetPort: "http"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(svc.Spec.ClusterIP, "127.") {
		t.Fatalf("cluster IP %q is not on loopback", svc.Spec.ClusterIP)
	}

	// Six pods spread over the three nodes.
	waitFor(t, "6 ready pods on 3 nodes", 90*time.Second, func() bool {
		m := readyPodsByNode(t, c)
		return total(m) == 6 && len(m) == 3
	})
	// One that fits nowhere says why.
	big := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "too-big"}, Spec: api.PodSpec{Containers: []api.Container{{
		Name: "c", Image: containerdtest.PythonRuntimeImage, Command: []string{"sleep", "1"},
		Resources: api.ResourceRequirements{Requests: api.ResourceList{"cpu": "100000"}}}}}}
	if _, err := c.Pods("default").Create(ctx, big); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, "too-big", 30*time.Second, "an Unschedulable condition naming cpu", func(p *api.Pod) bool {
		for _, cond := range p.Status.Conditions {
			if cond.Type == api.PodScheduled && cond.Status == api.ConditionFalse && strings.Contains(cond.Message, "cpu") {
				return true
			}
		}
		return false
	})

	// The Service answers on its cluster IP, through any node's proxy.
	addr := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "8080") + "/"
	// 5 s: a pod answers slowly on two busy cores; a dead peer never does.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	// Probe the Service all along while node-1 dies: its kubelet stops and
	// its containers are killed, as when the machine goes down.
	prober := startServiceProber(t, hc, addr)
	kubelets["node-1"].Stop()
	ctd.KillNode(t, "node-1")
	if left := nodeContainers(t, ctd.Runtime, "node-1"); len(left) > 0 {
		t.Fatalf("node-1's containers still there after the kill: %v", left)
	}
	// The pods have moved once the Service's Endpoints list the six new
	// ones and none of the dead node's: from then on every request must
	// succeed, with no allowance (a proxy whose watch lags a little may
	// still pick a dead endpoint, but the dial is refused at once and the
	// proxy tries the next).
	waitMovedOff(t, ctx, c, "127.0.0.11")
	moved := time.Now()
	n, err := c.Nodes().Get(ctx, "node-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == api.NodeReady && cond.Status == api.ConditionTrue {
			t.Errorf("node-1 still Ready after it died")
		}
	}
	// At least 30 requests sent after the move, each answered.
	prober.finish(t, moved)

	// The kubelet comes back: the node is Ready again.
	kubelets["node-1"].Start()
	waitFor(t, "node-1 Ready again", 30*time.Second, func() bool {
		n, err := c.Nodes().Get(ctx, "node-1")
		if err != nil {
			return false
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == api.NodeReady && cond.Status == api.ConditionTrue {
				return true
			}
		}
		return false
	})

	// Scale to zero and back; deleting the ReplicaSet deletes its pods.
	if _, err := c.Scale(ctx, "default", "web", 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no web pods", 60*time.Second, func() bool {
		pods, _, err := c.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(pods) == 0
	})
	if _, err := c.Scale(ctx, "default", "web", 3); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 ready pods", 60*time.Second, func() bool { return total(readyPodsByNode(t, c)) == 3 })
	if _, err := c.ReplicaSets("default").Delete(ctx, "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ReplicaSet's pods to be deleted", 60*time.Second, func() bool {
		pods, _, err := c.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(pods) == 0
	})
}
