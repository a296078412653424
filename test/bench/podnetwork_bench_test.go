package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// BenchmarkPodStartOwnNetwork measures, side by side in one run, the time
// from a pod bound to its node to Ready (an HTTP readiness probe passing)
// on a kubelet whose pods share the node's network and on one whose pods
// get their own through CNI (--pod-network cni, the kubelet in a simulated
// node's namespace). The two take turns, one pod at a time.
func BenchmarkPodStartOwnNetwork(b *testing.B) {
	ctd := framework.StartContainerd(b)
	ctd.ImportPythonRuntime(b)
	u := framework.StartUnderlay(b, 1)
	as := u.StartAPIServer(b, nil)
	framework.StartKubelet(b, as.URL, ctd, "host-net", "127.0.0.78")
	framework.StartNetKubelet(b, u.Nodes[0], as, ctd, "own-net")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := as.Client.Pods("default")
	events := pods.Watch(ctx, client.ListOptions{})
	// The own-network node has its pod CIDR before the first pod.
	deadline := time.Now().Add(time.Minute)
	for {
		if n, err := as.Client.Nodes().Get(ctx, "own-net"); err == nil && n.Spec.PodCIDR != "" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("node own-net did not register")
		}
		time.Sleep(100 * time.Millisecond)
	}
	n := max(b.N, 20)
	ready := map[string][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < n; i++ {
		for _, node := range []string{"host-net", "own-net"} {
			name := fmt.Sprintf("%s-%d-%d", node, b.N, i)
			_, tReady := startProbedPod(ctx, b, pods, events, name, node)
			ready[node] = append(ready[node], tReady)
			b.StopTimer()
			if _, err := pods.Delete(ctx, name, client.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	host, own := percentile(ready["host-net"], 50), percentile(ready["own-net"], 50)
	b.ReportMetric(host, "host-network-ready-p50-ms")
	b.ReportMetric(own, "own-network-ready-p50-ms")
	b.ReportMetric(percentile(ready["own-net"], 99), "own-network-ready-p99-ms")
	b.ReportMetric(own/host, "own-vs-host-ratio")
}
