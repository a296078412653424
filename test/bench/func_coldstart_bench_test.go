package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/scheduler"
	"minik8s/test/framework"
)

// BenchmarkFuncScaleFromZero measures a call to a function with no pod, to
// its first result: the counter rises, the ReplicaSet scales up, the pod is
// scheduled, started on containerd and probed ready, and the call runs.
// Between runs the function is taken back to zero pods. At least 20 runs.
func BenchmarkFuncScaleFromZero(b *testing.B) {
	ctd := framework.StartContainerd(b)
	ctd.ImportFunctionRuntime(b)
	s := framework.StartAPIServer(b)
	// A long idle window: only the benchmark takes the function to zero.
	framework.StartControllers(b, s, controller.Config{FuncScaleInterval: time.Hour, FuncIdleWindow: time.Hour})
	framework.StartScheduler(b, s, scheduler.Config{})
	framework.StartKubelet(b, s.URL, ctd, "node-bench", "127.0.0.31")
	ctx := context.Background()
	zero := 0
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: "cold"},
		Spec: api.FuncSpec{Name: "cold", Function: base64.StdEncoding.EncodeToString([]byte(echoCode)),
			MinInstanceNum: &zero, InitInstanceNum: &zero}}
	if _, err := s.Client.Funcs("default").Create(ctx, f); err != nil {
		b.Fatal(err)
	}
	runs := max(b.N, 20)
	lat := make([]time.Duration, 0, runs)
	b.ResetTimer()
	for i := 0; i < runs; i++ {
		b.StopTimer()
		toZero(b, s)
		b.StartTimer()
		t0 := time.Now()
		v := syncCall(b, s, "cold", fmt.Sprintf("run-%d", i))
		lat = append(lat, time.Since(t0))
		if v.Result != fmt.Sprintf("run-%d", i) {
			b.Fatalf("result %q", v.Result)
		}
	}
	b.StopTimer()
	b.ReportMetric(percentile(lat, 50), "cold-p50-ms")
	b.ReportMetric(percentile(lat, 99), "cold-p99-ms")
	b.ReportMetric(float64(len(lat)), "runs")
}

// toZero sets the function's counter to zero and waits until it has no
// pod and no endpoint left.
func toZero(b *testing.B, s *framework.APIServer) {
	ctx := context.Background()
	for {
		f, err := s.Client.Funcs("default").Get(ctx, "cold")
		if err != nil {
			b.Fatal(err)
		}
		if f.Status.Counter == 0 {
			break
		}
		f.Status.Counter = 0
		if _, err := s.Client.Funcs("default").UpdateStatus(ctx, f); err == nil {
			break
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: function.LabelFunc + "=cold"})
		ep, eerr := s.Client.Endpoints("default").Get(ctx, function.ObjectName("cold"))
		noAddr := eerr != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0
		if err == nil && len(pods) == 0 && noAddr {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("function did not get to zero pods: %d pods", len(pods))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
