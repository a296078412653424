package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// BenchmarkPodStartOwnNetwork measures, side by side in one run, the time
// from a pod bound to its node to Ready (an HTTP readiness probe passing)
// on a kubelet whose pods share the node's network and on one whose pods
// get their own through CNI (--pod-network cni, the kubelet in a simulated
// node's namespace). The two take turns, one pod at a time.
func BenchmarkPodStartOwnNetwork(b *testing.B) {
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportPythonRuntime(b)
	u := framework.StartUnderlay(b, 1)
	as := u.StartAPIServer(b, nil)
	framework.StartKubelet(b, as.URL, ctd, "host-net", "127.0.0.78")
	framework.StartNetKubelet(b, u.Nodes[0], as, ctd, "own-net")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := as.Client.Pods("default")
	events := pods.Watch(ctx, client.ListOptions{})
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

// serviceClient runs in a pod: it opens a connection, sends a request and
// reads the answer to its end, alternately to the server pod's IP and to
// its Service's cluster IP, ROUNDS times each after a warm-up, then times
// ROUNDS lookups of the Service's name through the cluster DNS, and prints
// the medians in milliseconds.
const serviceClient = clientOnce + `targets = {"pod-ip": (os.environ["POD_IP"], 8080), "cluster-ip": (os.environ["CLUSTER_IP"], 80)}
res = {k: [] for k in targets}
for i in range(20 + rounds):
    for k, a in targets.items():
        d = once(a)
        if i >= 20:
            res[k].append(d)
name = os.environ["NAME"]
dns = []
for i in range(20 + rounds):
    t = time.perf_counter()
    socket.getaddrinfo(name, 80, socket.AF_INET, socket.SOCK_STREAM)
    if i >= 20:
        dns.append(time.perf_counter() - t)
res["dns"] = dns
` + clientPrintMedians

// BenchmarkServiceRoundTrip measures, side by side in one run from a pod
// on node 1 of two (each in its namespace of an underlay), a connection
// and a request to a pod on node 2 by its pod IP and by its Service's
// cluster IP (the kernel's DNAT rules), and the lookup of the Service's
// name through the cluster DNS. b.N is the number of rounds.
func BenchmarkServiceRoundTrip(b *testing.B) {
	ctx := context.Background()
	u := framework.StartUnderlay(b, 2)
	as := u.StartAPIServer(b, nil)
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportPythonRuntime(b)
	client1 := framework.StartNetKubelet(b, u.Nodes[0], as, ctd, "rt-1")
	framework.StartNetKubelet(b, u.Nodes[1], as, ctd, "rt-2")
	framework.StartControllers(b, as, controller.Config{})
	c := as.Client
	svc, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []api.ServicePort{{Port: 80, TargetPort: "8080"}}}})
	if err != nil {
		b.Fatal(err)
	}
	server := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: api.PodSpec{NodeName: "rt-2", Containers: []api.Container{{Name: "web", Image: containerdtest.PythonRuntimeImage,
			Command:        []string{"python3", "-c", okServer},
			Ports:          []api.ContainerPort{{ContainerPort: 8080}},
			ReadinessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/", Port: "8080"}, PeriodSeconds: 1},
		}}}}
	if _, err := c.Pods("default").Create(ctx, server); err != nil {
		b.Fatal(err)
	}
	podIP := ""
	waitBench(b, 2*time.Minute, "the server pod ready in its Service", func() bool {
		ep, err := c.Endpoints("default").Get(ctx, "web")
		if err != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 {
			return false
		}
		podIP = ep.Subsets[0].Addresses[0].IP
		return true
	})
	rounds := max(b.N, 200)
	clientPod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "client", Namespace: "default"},
		Spec: api.PodSpec{NodeName: "rt-1", RestartPolicy: api.RestartPolicyNever, Containers: []api.Container{{
			Name: "client", Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", serviceClient},
			Env: []api.EnvVar{{Name: "POD_IP", Value: podIP}, {Name: "CLUSTER_IP", Value: svc.Spec.ClusterIP},
				{Name: "NAME", Value: "web.default.svc.cluster.local."}, {Name: "ROUNDS", Value: strconv.Itoa(rounds)}},
		}}}}
	medians := runClientPod(ctx, b, c, client1.RootDir, clientPod)
	b.ReportMetric(medians["pod-ip"], "pod-ip-p50-ms")
	b.ReportMetric(medians["cluster-ip"], "cluster-ip-p50-ms")
	b.ReportMetric(medians["cluster-ip"]/medians["pod-ip"], "cluster-vs-pod-ip-ratio")
	b.ReportMetric(medians["dns"], "dns-lookup-p50-ms")
}

// okServer is a pod's HTTP server on port 8080 answering "ok".
const okServer = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("0.0.0.0", 8080), H).serve_forever()`

// clientOnce begins a client pod's script: once(addr) opens a connection,
// sends a request and reads the answer to its end, and returns how long
// that took; rounds is the ROUNDS it measures.
const clientOnce = `import json, os, socket, statistics, time
rounds = int(os.environ["ROUNDS"])
def once(addr):
    t = time.perf_counter()
    s = socket.create_connection(addr, timeout=5)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    while s.recv(65536):
        pass
    s.close()
    return time.perf_counter() - t
`

// clientPrintMedians ends a client pod's script: it prints the medians of
// res's lists of seconds, in milliseconds, for runClientPod.
const clientPrintMedians = `print("RESULT " + json.dumps({k: statistics.median(v) * 1000 for k, v in res.items()}), flush=True)
`

// runClientPod times a client pod from its creation to its end and
// returns the medians it printed; its kubelet keeps its log in rootDir.
func runClientPod(ctx context.Context, b *testing.B, c *client.Client, rootDir string, pod *api.Pod) map[string]float64 {
	b.Helper()
	pods := c.Pods(pod.Namespace)
	b.ResetTimer()
	created, err := pods.Create(ctx, pod)
	if err != nil {
		b.Fatal(err)
	}
	var p *api.Pod
	waitBench(b, 10*time.Minute, "the client pod ended", func() bool {
		p, err = pods.Get(ctx, pod.Name)
		return err == nil && (p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed)
	})
	b.StopTimer()
	logData, _ := os.ReadFile(filepath.Join(rootDir, "pods", created.UID, "logs", pod.Spec.Containers[0].Name+".log"))
	_, result, ok := strings.Cut(string(logData), "RESULT ")
	var medians map[string]float64
	if !ok || json.Unmarshal([]byte(strings.SplitN(result, "\n", 2)[0]), &medians) != nil || p.Status.Phase != api.PodSucceeded {
		b.Fatalf("the client pod ended %s; its log:\n%s", p.Status.Phase, logData)
	}
	return medians
}

// waitBench polls cond until it holds, failing the benchmark after timeout.
func waitBench(b *testing.B, timeout time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("%s: not after %s", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
