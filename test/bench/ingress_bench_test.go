package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// keepAliveServer answers "ok" over HTTP/1.1 (kept-alive connections, as
// any web server a user runs behind an Ingress), without Nagle's delay, as
// nginx (tcp_nodelay), Go and Node.js servers send: Python's http.server
// writes the headers and the body apart, and with Nagle its body waits for
// the peer's delayed ACK of the headers (about 40 ms), through the Service
// as through the Ingress.
const keepAliveServer = `import http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("0.0.0.0", 8080), H).serve_forever()`

// BenchmarkIngressVsService measures, side by side in one run, a request
// from node 1 (of two, each in its own network namespace of an underlay,
// pods on their own network, Services in the kernel) to a web server pod
// on node 2: through node 1's ingress controller (port 80, a host and
// path rule of an Ingress) and at its Service's cluster IP, the two in
// turn request by request over kept-alive connections; then 16 callers
// each. b.N is the number of rounds (at least 2000).
func BenchmarkIngressVsService(b *testing.B) {
	ctx := context.Background()
	u := framework.StartUnderlay(b, 2)
	as := u.StartAPIServer(b, nil)
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportPythonRuntime(b)
	framework.StartNetKubelet(b, u.Nodes[0], as, ctd, "ing-1")
	framework.StartNetKubelet(b, u.Nodes[1], as, ctd, "ing-2")
	framework.StartControllers(b, as, controller.Config{})
	framework.StartScheduler(b, as, scheduler.Config{})
	c := as.Client
	svc, err := c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: "8080"}}}})
	if err != nil {
		b.Fatal(err)
	}
	server := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: api.PodSpec{NodeName: "ing-2", Containers: []api.Container{{Name: "web", Image: containerdtest.PythonRuntimeImage,
			Command:        []string{"python3", "-c", keepAliveServer},
			Ports:          []api.ContainerPort{{ContainerPort: 8080}},
			ReadinessProbe: &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/", Port: "8080"}, PeriodSeconds: 1},
		}}}}
	if _, err := c.Pods("default").Create(ctx, server); err != nil {
		b.Fatal(err)
	}
	prefix := api.PathTypePrefix
	if _, err := c.Ingresses("default").Create(ctx, &api.Ingress{ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.IngressSpec{Rules: []api.IngressRule{{Host: "web.example.com", IngressRuleValue: api.IngressRuleValue{HTTP: &api.HTTPIngressRuleValue{
			Paths: []api.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: api.IngressBackend{Service: &api.IngressServiceBackend{
				Name: "web", Port: api.ServiceBackendPort{Name: "http"}}}}}}}}}}}); err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: u.Nodes[0].DialContext,
		MaxIdleConnsPerHost: 32}}
	ingressURL := "http://" + net.JoinHostPort(u.Nodes[0].IP, "80") + "/"
	serviceURL := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	get := func(url string) error {
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = "web.example.com"
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return &statusError{url, resp.StatusCode}
		}
		return nil
	}
	waitBench(b, 2*time.Minute, "the pod answering through the Service and the Ingress", func() bool {
		return get(serviceURL) == nil && get(ingressURL) == nil
	})
	rounds := max(b.N, 2000)
	b.ResetTimer()
	lat := map[string][]time.Duration{}
	for range rounds {
		for _, target := range []struct{ name, url string }{{"ingress", ingressURL}, {"service", serviceURL}} {
			start := time.Now()
			if err := get(target.url); err != nil {
				b.Fatalf("%s: %v", target.name, err)
			}
			lat[target.name] = append(lat[target.name], time.Since(start))
		}
	}
	rate := map[string]float64{}
	for _, target := range []struct{ name, url string }{{"ingress", ingressURL}, {"service", serviceURL}} {
		const callers, each = 16, 200
		start := time.Now()
		var wg sync.WaitGroup
		var failed error
		var mu sync.Mutex
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if err := get(target.url); err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		if failed != nil {
			b.Fatalf("%s with %d callers: %v", target.name, callers, failed)
		}
		rate[target.name] = callers * each / time.Since(start).Seconds()
	}
	b.StopTimer()
	p := func(name string, q float64) float64 {
		d := lat[name]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p("ingress", 0.5), "ingress-p50-ms")
	b.ReportMetric(p("service", 0.5), "service-p50-ms")
	b.ReportMetric(p("ingress", 0.5)/p("service", 0.5), "ingress-vs-service-p50-ratio")
	b.ReportMetric(p("ingress", 0.99), "ingress-p99-ms")
	b.ReportMetric(p("service", 0.99), "service-p99-ms")
	b.ReportMetric(rate["ingress"], "ingress-16-callers-req/s")
	b.ReportMetric(rate["service"], "service-16-callers-req/s")
}

type statusError struct {
	url  string
	code int
}

func (e *statusError) Error() string { return e.url + ": status " + http.StatusText(e.code) }
