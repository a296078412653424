package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

const benchServer = `import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.HTTPServer((os.environ["HOST"], int(os.environ["PORT"])), H).serve_forever()
`

// BenchmarkKubeletPodStart measures, over at least 20 pods, the time from a
// pod bound to the node (created with spec.nodeName) to its status saying
// Running, and to Ready (an HTTP readiness probe on its allocated port
// passing). Pods start one after another on one kubelet with containerd.
func BenchmarkKubeletPodStart(b *testing.B) {
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportPythonRuntime(b)
	as := framework.StartAPIServer(b)
	framework.StartKubelet(b, as.URL, ctd, "bench-node", "127.0.0.19")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := as.Client.Pods("default")
	events := pods.Watch(ctx, client.ListOptions{})

	n := b.N
	if n < 20 {
		n = 20
	}
	var running, ready []time.Duration
	b.ResetTimer()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench-%d-%d", b.N, i)
		tRunning, tReady := startProbedPod(ctx, b, pods, events, name, "bench-node")
		ready = append(ready, tReady)
		running = append(running, tRunning)
		b.StopTimer()
		if _, err := pods.Delete(ctx, name, client.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(percentile(running, 50), "running-p50-ms")
	b.ReportMetric(percentile(running, 99), "running-p99-ms")
	b.ReportMetric(percentile(ready, 50), "ready-p50-ms")
	b.ReportMetric(percentile(ready, 99), "ready-p99-ms")
	b.ReportMetric(float64(len(ready)), "pods")
}

// startProbedPod creates a pod serving HTTP on an allocated port, with a
// readiness probe on it, bound to node, and returns how long after the
// create its status said Running and Ready, as events (a watch of the
// pods) tell.
func startProbedPod(ctx context.Context, b *testing.B, pods *client.ResourceClient[api.Pod, *api.Pod], events <-chan client.Event[*api.Pod], name, node string) (running, ready time.Duration) {
	b.Helper()
	grace := int64(1)
	p := &api.Pod{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec: api.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			Containers: []api.Container{{
				Name: "web", Image: containerdtest.PythonRuntimeImage,
				Command:        []string{"python3", "-c", benchServer},
				Ports:          []api.ContainerPort{{Name: "http"}},
				ReadinessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/", Port: "http"}, PeriodSeconds: 1},
			}},
		},
	}
	return startPod(ctx, b, pods, events, p)
}

// startPod creates p and returns how long after the create its status
// said Running and Ready, as events (a watch of the pods) tell.
func startPod(ctx context.Context, b *testing.B, pods *client.ResourceClient[api.Pod, *api.Pod], events <-chan client.Event[*api.Pod], p *api.Pod) (running, ready time.Duration) {
	b.Helper()
	name := p.Name
	t0 := time.Now()
	if _, err := pods.Create(ctx, p); err != nil {
		b.Fatal(err)
	}
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				b.Fatal("watch ended")
			}
			if ev.Object.Name != name {
				continue
			}
			if running == 0 && ev.Object.Status.Phase == api.PodRunning {
				running = time.Since(t0)
			}
			for _, c := range ev.Object.Status.Conditions {
				if c.Type == api.PodReady && c.Status == api.ConditionTrue {
					return running, time.Since(t0)
				}
			}
		case <-timeout:
			b.Fatalf("pod %s not ready after 2 minutes", name)
		}
	}
}
