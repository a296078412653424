package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/kubelet/proxy"
	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

var benchHTTP = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}

// callers is the number of concurrent callers of the throughput figures.
const callers = 16

// startRuntime runs a real funcserver serving code on a loopback port.
func startRuntime(b *testing.B, code string) int32 {
	b.Helper()
	return framework.StartFuncServer(b, code, 4)
}

// warmFunc stores a v2 template (left and right name the next functions)
// and publishes a runtime serving it as its only pod.
func warmFunc(b *testing.B, s *framework.APIServer, name, code, left, right string) int32 {
	b.Helper()
	port := startRuntime(b, code)
	publishFunc(b, s, name, code, left, right, port)
	return port
}

// publishFunc stores a v2 template and publishes the runtime on port as
// its only pod.
func publishFunc(b *testing.B, s *framework.APIServer, name, code, left, right string, port int32) {
	b.Helper()
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.FuncSpec{Name: name, Function: base64.StdEncoding.EncodeToString([]byte(code)), Left: left, Right: right}}
	if _, err := s.Client.Funcs("default").Create(context.Background(), f); err != nil {
		b.Fatal(err)
	}
	s.PublishFunctionPods(b, name, port)
}

// startWarm starts an apiserver and a function runner in its process, as
// minik8s up does: enough for calls to functions whose pods are published
// by hand.
func startWarm(b *testing.B) *framework.APIServer {
	s := framework.StartAPIServer(b)
	framework.StartLocalFuncRunner(b, s)
	return s
}

// tryPost POSTs body and returns the answer; it never stops the benchmark,
// so that any goroutine may use it.
func tryPost(url, body string, want int) ([]byte, error) {
	return tryPostWith(benchHTTP, url, body, want)
}

func tryPostWith(hc *http.Client, url, body string, want int) ([]byte, error) {
	for {
		resp, err := hc.Post(url, "text/plain", bytes.NewBufferString(body))
		if err != nil {
			return nil, err
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
			// Shed: sent again after Retry-After, as pkg/client does.
			shed.Add(1)
			secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			time.Sleep(time.Duration(secs) * time.Second)
			continue
		}
		if resp.StatusCode != want {
			return nil, fmt.Errorf("%s: %s %s", url, resp.Status, data)
		}
		return data, nil
	}
}

// shed counts the calls the apiserver answered 429 (and were sent again).
var shed atomic.Int64

func post(b *testing.B, url, body string) []byte {
	data, err := tryPost(url, body, http.StatusOK)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// trySyncCall calls fn and waits for its answer (?wait=).
func trySyncCall(s *framework.APIServer, fn, arg string) (api.FuncInstanceView, error) {
	var v api.FuncInstanceView
	data, err := tryPost(s.URL+"/api/funcs/"+fn+"?wait=60s", arg, http.StatusOK)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, err
	}
	if v.Status != api.InstanceSucceeded {
		return v, fmt.Errorf("call %s: %+v", fn, v)
	}
	return v, nil
}

func syncCall(b *testing.B, s *framework.APIServer, fn, arg string) api.FuncInstanceView {
	v, err := trySyncCall(s, fn, arg)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// tryAccept makes an asynchronous call and returns its instance id.
func tryAccept(s *framework.APIServer, fn, arg string) (string, error) {
	return tryAcceptWith(benchHTTP, s, fn, arg)
}

func tryAcceptWith(hc *http.Client, s *framework.APIServer, fn, arg string) (string, error) {
	data, err := tryPostWith(hc, s.URL+"/api/funcs/"+fn, arg, http.StatusAccepted)
	if err != nil {
		return "", err
	}
	var v api.FuncInstanceView
	if err := json.Unmarshal(data, &v); err != nil || v.InstanceID == "" {
		return "", fmt.Errorf("call %s: no instance id in %s", fn, data)
	}
	return v.InstanceID, nil
}

// asyncCall makes an asynchronous call and waits for its end as a client
// does: by watch, reading the view.
func asyncCall(b *testing.B, s *framework.APIServer, fn, arg string) *api.FuncInstanceView {
	id, err := tryAccept(s, fn, arg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	v, err := s.Client.FuncCalls("default").Wait(ctx, id)
	if err != nil {
		b.Fatalf("waiting for %s: %v", id, err)
	}
	if v.Status != api.InstanceSucceeded {
		b.Fatalf("call %s: %+v", fn, v)
	}
	return v
}

// concurrently makes n calls from workers goroutines and returns their
// latencies, the calls per second, and the errors with the first one.
func concurrently(n, workers int, call func(i int) error) (lat []time.Duration, perSec float64, errs int, first error) {
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				t0 := time.Now()
				err := call(i)
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				if err != nil {
					if errs++; first == nil {
						first = err
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return lat, float64(n) / time.Since(start).Seconds(), errs, first
}

const echoCode = "def run(arg):\n    return arg\n"

// serveFuncService gives a function published by hand the Service the
// function controller makes, and runs a node's Service proxy for it, as a
// kubelet does; it returns the Service's URL on its cluster IP.
func serveFuncService(b *testing.B, s *framework.APIServer, fn string) string {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc := &api.Service{ObjectMeta: api.ObjectMeta{Name: function.ObjectName(fn), Namespace: "default"},
		Spec: api.ServiceSpec{Selector: function.Selector(fn),
			Ports: []api.ServicePort{{Name: function.PortName, Port: function.ServicePort, TargetPort: function.PortName}}}}
	created, err := s.Client.Services("default").Create(ctx, svc)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = proxy.NewFromClient(s.Client).Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	url := fmt.Sprintf("http://%s:%d%s", created.Spec.ClusterIP, function.ServicePort, function.InvokePath)
	for i := 0; ; i++ {
		if _, err := tryPost(url, "ping", http.StatusOK); err == nil {
			return url
		} else if i > 200 {
			b.Fatalf("the Service of %s does not serve at %s: %v", fn, url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchmarkFuncWarmCall compares a warm synchronous call through the
// apiserver with the same call sent to the function's Service address (a
// node's Service proxy in between, as a client in the cluster calls it)
// and straight to its pod, in one run: one caller (latency), then 16
// concurrent callers (throughput). Two apiservers share the pod: one hands
// its calls to the runner in its process (minik8s up), the other to a
// runner it reaches over HTTP (a bin/funcrunner).
func BenchmarkFuncWarmCall(b *testing.B) {
	port := startRuntime(b, echoCode)
	pod := fmt.Sprintf("http://127.0.0.1:%d%s", port, function.InvokePath)
	local := startWarm(b)
	remote := framework.StartAPIServer(b)
	framework.StartFuncRunner(b, remote)
	for _, s := range []*framework.APIServer{local, remote} {
		publishFunc(b, s, "echo", echoCode, "RETURN", "", port)
		syncCall(b, s, "echo", "warm-up")
	}
	service := serveFuncService(b, local, "echo")

	measure := func(call func()) (p50, p99 float64) {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			call()
			lat = append(lat, time.Since(t0))
		}
		return percentile(lat, 50), percentile(lat, 99)
	}
	parallel := func(call func(i int) error) (p50, perSec float64) {
		lat, perSec, errs, first := concurrently(b.N, callers, call)
		if errs > 0 {
			b.Fatalf("%d of %d concurrent calls failed, first: %v", errs, b.N, first)
		}
		return percentile(lat, 50), perSec
	}
	viaAPI := func(s *framework.APIServer) func() { return func() { syncCall(b, s, "echo", "hello") } }
	viaAPIc := func(s *framework.APIServer) func(int) error {
		return func(int) error { _, err := trySyncCall(s, "echo", "hello"); return err }
	}
	direct := func(url string) func() { return func() { post(b, url, "hello") } }
	directc := func(url string) func(int) error {
		return func(int) error { _, err := tryPost(url, "hello", http.StatusOK); return err }
	}
	b.ResetTimer()
	sp50, sp99 := measure(direct(service))
	pp50, pp99 := measure(direct(pod))
	lp50, lp99 := measure(viaAPI(local))
	rp50, rp99 := measure(viaAPI(remote))
	scp50, sps := parallel(directc(service))
	pcp50, pps := parallel(directc(pod))
	lcp50, lps := parallel(viaAPIc(local))
	rcp50, rps := parallel(viaAPIc(remote))
	b.StopTimer()
	for _, m := range []struct {
		name           string
		p50, p99, cp50 float64
		perSec         float64
	}{
		{"service", sp50, sp99, scp50, sps},
		{"pod", pp50, pp99, pcp50, pps},
		{"api", lp50, lp99, lcp50, lps},
		{"api-remote", rp50, rp99, rcp50, rps},
	} {
		b.ReportMetric(m.p50, m.name+"-p50-ms")
		b.ReportMetric(m.p99, m.name+"-p99-ms")
		b.ReportMetric(m.cp50, m.name+"-c16-p50-ms")
		b.ReportMetric(m.perSec, m.name+"-c16-calls/s")
	}
	if sp50 > 0 && pp50 > 0 && sps > 0 && pps > 0 {
		// The figures: the apiserver against the Service address.
		b.ReportMetric(lp50/sp50, "p50-ratio")
		b.ReportMetric(lps/sps, "c16-throughput-share")
		b.ReportMetric(rp50/sp50, "remote-p50-ratio")
		b.ReportMetric(rps/sps, "remote-c16-throughput-share")
		// Against the pod itself, no proxy in between.
		b.ReportMetric(lp50/pp50, "pod-p50-ratio")
		b.ReportMetric(lps/pps, "pod-c16-throughput-share")
	}
}

const countdownCode = "def run(arg):\n    return str(int(arg) - 1)\n\ndef check(ret):\n    return int(ret) > 0\n"

// BenchmarkFuncChainHop measures what one more hop of a chain costs: a
// 10-hop chain against a 1-hop chain of the same function, called
// synchronously and asynchronously (202, then waiting for the end by
// watch as a client does).
func BenchmarkFuncChainHop(b *testing.B) {
	s := startWarm(b)
	warmFunc(b, s, "hop", countdownCode, "hop", "RETURN")
	syncCall(b, s, "hop", "1")
	var sync1, sync10, async1, async10 []time.Duration
	timed := func(into *[]time.Duration, hops int, call func(arg string) []api.FuncStepRecord) {
		t0 := time.Now()
		if steps := call(fmt.Sprint(hops)); len(steps) != hops {
			b.Fatalf("%d-hop chain ran %d steps", hops, len(steps))
		}
		*into = append(*into, time.Since(t0))
	}
	syncSteps := func(arg string) []api.FuncStepRecord { return syncCall(b, s, "hop", arg).Steps }
	asyncSteps := func(arg string) []api.FuncStepRecord { return asyncCall(b, s, "hop", arg).Steps }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		timed(&sync1, 1, syncSteps)
		timed(&sync10, 10, syncSteps)
		timed(&async1, 1, asyncSteps)
		timed(&async10, 10, asyncSteps)
	}
	b.StopTimer()
	report := func(mode string, one, ten []time.Duration) {
		p1, p10 := percentile(one, 50), percentile(ten, 50)
		b.ReportMetric(p1, mode+"-1hop-p50-ms")
		b.ReportMetric(p10, mode+"-10hop-p50-ms")
		b.ReportMetric((p10-p1)/9, mode+"-per-hop-ms")
	}
	report("sync", sync1, sync10)
	report("async", async1, async10)
}
