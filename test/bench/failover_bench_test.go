package bench

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// failoverGrace is the node monitor grace period of the benchmark's
// controllers: most of a failover is this wait before the node is declared
// dead, so it is reported with the figures.
const failoverGrace = 8 * time.Second

// BenchmarkNodeFailover measures the time from a node's death (its kubelet
// stopped and its containers killed, as when the machine goes down) until
// its pods run elsewhere and the Service answers again: the ReplicaSet's six
// replicas are Ready on the live nodes, the Service's Endpoints list none
// of the dead node's pods, and a request to the cluster IP succeeds. Three
// nodes share one containerd; each run kills the node with the most pods,
// then brings its kubelet back. At least 3 runs.
func BenchmarkNodeFailover(b *testing.B) {
	cl := framework.StartCluster(b, controller.Config{NodeMonitorGracePeriod: failoverGrace}, "fo-node", 3, 50)
	ctd, s, kubelets := cl.Containerd, cl.APIServer, cl.Kubelets
	ctd.ImportPythonRuntime(b)
	ctx := context.Background()
	c := s.Client
	const replicas = 6
	if _, err := c.ReplicaSets("default").Create(ctx, failoverReplicaSet(replicas)); err != nil {
		b.Fatal(err)
	}
	svc, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "fo-web"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "fo-web"}, Ports: []api.ServicePort{{Port: 8080, TargetPort: "http"}}}})
	if err != nil {
		b.Fatal(err)
	}
	addr := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "8080") + "/"
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	answers := func() bool {
		resp, err := hc.Get(addr)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}

	runs := max(b.N, 3)
	var moved, served []time.Duration
	b.ResetTimer()
	for i := 0; i < runs; i++ {
		b.StopTimer()
		// Steady state: every replica Ready and listed, every node Ready.
		benchWait(b, "a steady cluster", 3*time.Minute, func() bool {
			return total(failoverReady(b, c, "")) == replicas && endpointsClean(b, c, "", replicas) &&
				nodesReady(b, c, len(kubelets)) && answers()
		})
		victim, most := "", -1
		for node, n := range failoverReady(b, c, "") {
			if n > most {
				victim, most = node, n
			}
		}
		b.StartTimer()

		t0 := time.Now()
		kubelets[victim].Stop()
		ctd.KillNode(b, victim)
		var tMoved time.Duration
		benchWait(b, "the pods of "+victim+" to run elsewhere", 3*time.Minute, func() bool {
			if tMoved == 0 {
				m := failoverReady(b, c, victim)
				if total(m) == replicas {
					tMoved = time.Since(t0)
				}
			}
			return tMoved != 0 && endpointsClean(b, c, victim, replicas) && answers()
		})
		served = append(served, time.Since(t0))
		moved = append(moved, tMoved)

		b.StopTimer()
		kubelets[victim].Start()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(percentile(served, 50), "failover-p50-ms")
	b.ReportMetric(percentile(served, 100), "failover-max-ms")
	b.ReportMetric(percentile(moved, 50), "moved-p50-ms")
	b.ReportMetric(float64(failoverGrace/time.Millisecond), "grace-ms")
	b.ReportMetric(float64(len(served)), "runs")
}

// failoverReplicaSet serves HTTP with python on an allocated port, ready
// when it answers.
func failoverReplicaSet(replicas int32) *api.ReplicaSet {
	labels := map[string]string{"app": "fo-web"}
	return &api.ReplicaSet{
		ObjectMeta: api.ObjectMeta{Name: "fo-web"},
		Spec: api.ReplicaSetSpec{Replicas: &replicas, Selector: &api.LabelSelector{MatchLabels: labels},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: labels}, Spec: api.PodSpec{
				Containers: []api.Container{{
					Name: "web", Image: containerdtest.PythonRuntimeImage,
					Command:   []string{"python3", "-c", benchServer},
					Ports:     []api.ContainerPort{{Name: "http"}},
					Resources: api.ResourceRequirements{Requests: api.ResourceList{"cpu": "100m", "memory": "32Mi"}},
					ReadinessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/", Port: "http"},
						PeriodSeconds: 1, FailureThreshold: 1},
				}},
			}}},
	}
}

// failoverReady counts the Ready, not terminating replicas per node,
// leaving out those on node except (none when except is "").
func failoverReady(b *testing.B, c *client.Client, except string) map[string]int {
	pods, _, err := c.Pods("default").List(context.Background(), client.ListOptions{LabelSelector: "app=fo-web"})
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Spec.NodeName == except {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == api.PodReady && cond.Status == api.ConditionTrue {
				out[p.Spec.NodeName]++
			}
		}
	}
	return out
}

// endpointsClean reports whether the Service's Endpoints list want ready
// addresses, none on node dead.
func endpointsClean(b *testing.B, c *client.Client, dead string, want int) bool {
	ep, err := c.Endpoints("default").Get(context.Background(), "fo-web")
	if err != nil {
		return false
	}
	n := 0
	for _, sub := range ep.Subsets {
		for _, a := range sub.Addresses {
			if dead != "" && a.NodeName == dead {
				return false
			}
			n++
		}
	}
	return n == want
}

// nodesReady reports whether n nodes are Ready.
func nodesReady(b *testing.B, c *client.Client, n int) bool {
	nodes, _, err := c.Nodes().List(context.Background(), client.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ready := 0
	for _, node := range nodes {
		for _, cond := range node.Status.Conditions {
			if cond.Type == api.NodeReady && cond.Status == api.ConditionTrue {
				ready++
			}
		}
	}
	return ready == n
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// benchWait polls fn until it holds, failing after within.
func benchWait(b *testing.B, what string, within time.Duration, fn func() bool) {
	b.Helper()
	deadline := time.Now().Add(within)
	for !fn() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
