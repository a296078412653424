package test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// TestNodeFailureWithOwnNetwork: three nodes in their namespaces of an
// underlay, pods on their own network behind a Service. Node 1 dies (its
// kubelet killed, its containers killed, its leg of the underlay down, as
// when the machine goes away): its pods move to the others, and from node
// 2 the Service's cluster IP answers every request once its Endpoints and
// node 2's rules no longer name the dead node's pods.
func TestNodeFailureWithOwnNetwork(t *testing.T) {
	t.Parallel()
	u := framework.StartUnderlay(t, 3)
	s := u.StartAPIServer(t, nil)
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	framework.StartControllers(t, s, controller.Config{NodeMonitorGracePeriod: 8 * time.Second})
	framework.StartScheduler(t, s, scheduler.Config{})
	kubelets := map[string]*framework.NetKubelet{}
	for i, node := range u.Nodes {
		name := fmt.Sprintf("node-%d", i+1)
		kubelets[name] = framework.StartNetKubelet(t, node, s, ctd, name)
	}
	ctx := context.Background()
	c := s.Client
	replicas := int32(6)
	labels := map[string]string{"app": "web"}
	web := webPod("web", "")
	c0 := &web.Spec.Containers[0]
	c0.ReadinessProbe = &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/", Port: "8080"}, PeriodSeconds: 1, FailureThreshold: 1}
	c0.Resources = api.ResourceRequirements{Requests: api.ResourceList{"cpu": "100m", "memory": "32Mi"}}
	if _, err := c.ReplicaSets("default").Create(ctx, &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ReplicaSetSpec{Replicas: &replicas, Selector: &api.LabelSelector{MatchLabels: labels},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: labels}, Spec: web.Spec}}}); err != nil {
		t.Fatal(err)
	}
	svc, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ServiceSpec{Selector: labels, Ports: []api.ServicePort{{Port: 80, TargetPort: "8080"}}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "6 ready pods on 3 nodes", 90*time.Second, func() bool {
		m := readyPodsByNode(t, c)
		return total(m) == 6 && len(m) == 3
	})
	// Requests come from node 2, which stays up.
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	hc := u.Nodes[1].HTTPClient()
	hc.Timeout = 5 * time.Second // a pod answers slowly on two busy cores; a dead peer never does
	prober := startServiceProber(t, hc, url)
	dead := podIPsOn(t, ctx, c, "node-1")
	// Ready pods reach node 2's rules through the Endpoints, a moment later.
	waitFor(t, "node 2's proxy rules to send to node 1's pods before it dies", 30*time.Second, func() bool {
		return rulesTo(t, ctx, u.Nodes[1], dead) == len(dead)
	})
	kubelets["node-1"].Kill()
	ctd.KillNode(t, "node-1")
	if out, err := u.Nodes[0].Command(ctx, "ip", "link", "set", "eth0", "down").CombinedOutput(); err != nil {
		t.Fatalf("taking node 1's link down: %v: %s", err, out)
	}
	waitMovedOff(t, ctx, c, "")
	// Node 2's rules follow the Endpoints: once they send nothing to the
	// dead pods (a connection there would wait for a peer that is gone),
	// every request must be answered.
	waitFor(t, "node 2's proxy rules to send nothing to node 1's pods", 60*time.Second, func() bool {
		return rulesTo(t, ctx, u.Nodes[1], dead) == 0
	})
	prober.finish(t, time.Now())
}

// rulesTo counts the pods (by address, on the web pods' port 8080) that
// node's proxy rules send connections to.
func rulesTo(t *testing.T, ctx context.Context, node *framework.NetNode, ips []string) int {
	t.Helper()
	out, err := node.Command(ctx, "iptables-save", "-t", "nat").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save in %s: %v: %s", node.Name, err, out)
	}
	n := 0
	for _, ip := range ips {
		if strings.Contains(string(out), "--to-destination "+net.JoinHostPort(ip, "8080")) {
			n++
		}
	}
	return n
}

// podIPsOn lists the addresses of the web pods on node.
func podIPsOn(t *testing.T, ctx context.Context, c *client.Client, node string) []string {
	t.Helper()
	pods, _, err := c.Pods("default").List(ctx, client.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, p := range pods {
		if p.Spec.NodeName == node && p.Status.PodIP != "" {
			ips = append(ips, p.Status.PodIP)
		}
	}
	if len(ips) == 0 {
		t.Fatalf("no web pod with an address on %s", node)
	}
	return ips
}
