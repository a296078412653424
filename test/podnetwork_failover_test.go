package test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/scheduler"
	"minik8s/test/framework"
)

// TestNodeFailureWithOwnNetwork: three nodes in their namespaces of an
// underlay, pods on their own network behind a Service. Node 1 dies (its
// kubelet killed, its containers killed, its leg of the underlay down, as
// when the machine goes away): its pods move to the others, and from node
// 2 the Service's cluster IP answers every request once its Endpoints no
// longer list the dead node's pods.
func TestNodeFailureWithOwnNetwork(t *testing.T) {
	u := framework.StartUnderlay(t, 3)
	s := u.StartAPIServer(t, nil)
	ctd := framework.StartContainerd(t)
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
	hc.Timeout = 2 * time.Second
	prober := startServiceProber(t, hc, url)
	kubelets["node-1"].Kill()
	ctd.KillNode(t, "node-1")
	if out, err := u.Nodes[0].Command(ctx, "ip", "link", "set", "eth0", "down").CombinedOutput(); err != nil {
		t.Fatalf("taking node 1's link down: %v: %s", err, out)
	}
	waitMovedOff(t, ctx, c, "")
	// Node 2's rules follow the Endpoints within a moment: requests sent
	// from a second after the move on must all be answered.
	moved := time.Now().Add(time.Second)
	prober.finish(t, moved)
}
