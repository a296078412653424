package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"minik8s/funcserver"
	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

var benchHTTP = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}

// startRuntime runs a real funcserver serving code on a loopback port.
func startRuntime(b *testing.B, code string) int32 {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, function.FileFunction), []byte(code), 0o644); err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := int32(l.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = funcserver.Run(ctx, funcserver.Config{CodeDir: dir, Listener: l, Workers: 4})
	}()
	b.Cleanup(func() { cancel(); <-done })
	for i := 0; ; i++ {
		resp, err := benchHTTP.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return port
			}
		}
		if i > 600 {
			b.Fatal("funcserver not ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// setupFunc stores a template and publishes a runtime as its only endpoint.
func setupFunc(b *testing.B, s *framework.APIServer, name, code, left string, port int32) {
	b.Helper()
	ctx := context.Background()
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.FuncSpec{Name: name, Function: base64.StdEncoding.EncodeToString([]byte(code)), Left: left}}
	if _, err := s.Client.Funcs("default").Create(ctx, f); err != nil {
		b.Fatal(err)
	}
	s.PublishFunctionPods(b, name, port)
}

func post(b *testing.B, url, body string) []byte {
	resp, err := benchHTTP.Post(url, "text/plain", bytes.NewBufferString(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		b.Fatalf("%s: %s %s", url, resp.Status, data)
	}
	return data
}

func syncCall(b *testing.B, s *framework.APIServer, fn, arg string) api.FuncInstanceView {
	var v api.FuncInstanceView
	if err := json.Unmarshal(post(b, s.URL+"/api/funcs/"+fn+"?wait=60s", arg), &v); err != nil {
		b.Fatal(err)
	}
	if v.Status != api.InstanceSucceeded {
		b.Fatalf("call %s: %+v", fn, v)
	}
	return v
}

const echoCode = "def run(arg):\n    return arg\n"

// BenchmarkFuncWarmCall compares a warm synchronous call through the
// apiserver (instance recorded in etcd, chain driven, result stored) with
// the same call sent straight to the function's runtime.
func BenchmarkFuncWarmCall(b *testing.B) {
	s := framework.StartAPIServer(b)
	port := startRuntime(b, echoCode)
	setupFunc(b, s, "echo", echoCode, "RETURN", port)
	direct := fmt.Sprintf("http://127.0.0.1:%d%s", port, function.InvokePath)
	syncCall(b, s, "echo", "warm-up")

	measure := func(call func()) (p50, p99, perSec float64) {
		lat := make([]time.Duration, 0, b.N)
		start := time.Now()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			call()
			lat = append(lat, time.Since(t0))
		}
		return percentile(lat, 50), percentile(lat, 99), float64(b.N) / time.Since(start).Seconds()
	}
	b.ResetTimer()
	ap50, ap99, aps := measure(func() { syncCall(b, s, "echo", "hello") })
	dp50, dp99, dps := measure(func() { post(b, direct, "hello") })
	b.StopTimer()
	b.ReportMetric(ap50, "api-p50-ms")
	b.ReportMetric(ap99, "api-p99-ms")
	b.ReportMetric(aps, "api-calls/s")
	b.ReportMetric(dp50, "direct-p50-ms")
	b.ReportMetric(dp99, "direct-p99-ms")
	b.ReportMetric(dps, "direct-calls/s")
	if dp50 > 0 {
		b.ReportMetric(ap50/dp50, "p50-ratio")
	}
}

// BenchmarkFuncChainHop measures what one more hop of a chain costs: a
// 10-hop chain against a 1-hop chain of the same function.
func BenchmarkFuncChainHop(b *testing.B) {
	s := framework.StartAPIServer(b)
	countdown := "def run(arg):\n    return str(int(arg) - 1)\n\ndef check(ret):\n    return int(ret) > 0\n"
	port := startRuntime(b, countdown)
	ctx := context.Background()
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: "hop"},
		Spec: api.FuncSpec{Name: "hop", Function: base64.StdEncoding.EncodeToString([]byte(countdown)), Left: "hop", Right: "RETURN"}}
	if _, err := s.Client.Funcs("default").Create(ctx, f); err != nil {
		b.Fatal(err)
	}
	s.PublishFunctionPods(b, "hop", port)
	syncCall(b, s, "hop", "1")
	var one, ten []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if v := syncCall(b, s, "hop", "1"); len(v.Steps) != 1 {
			b.Fatalf("1-hop chain ran %d steps", len(v.Steps))
		}
		one = append(one, time.Since(t0))
		t0 = time.Now()
		if v := syncCall(b, s, "hop", "10"); len(v.Steps) != 10 {
			b.Fatalf("10-hop chain ran %d steps", len(v.Steps))
		}
		ten = append(ten, time.Since(t0))
	}
	b.StopTimer()
	p1, p10 := percentile(one, 50), percentile(ten, 50)
	b.ReportMetric(p1, "1hop-p50-ms")
	b.ReportMetric(p10, "10hop-p50-ms")
	b.ReportMetric((p10-p1)/9, "per-hop-ms")
}
