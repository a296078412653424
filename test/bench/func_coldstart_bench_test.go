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
// Between runs the function goes back to zero pods as an idle function
// does (a short idle window). At least 20 runs.
func BenchmarkFuncScaleFromZero(b *testing.B) {
	ctd := framework.StartContainerd(b)
	ctd.ImportFunctionRuntime(b)
	s := framework.StartAPIServer(b)
	framework.StartFuncRunner(b, s)
	// A short idle window: the function scales back to zero soon after
	// each call (the calls waiting for a pod hold it at one meanwhile).
	framework.StartControllers(b, s, controller.Config{FuncScaleInterval: 100 * time.Millisecond, FuncIdleWindow: 500 * time.Millisecond})
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
		toZero(b, s, "cold")
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

// toZero waits until function fn has no pod and no endpoint left: the
// function controller takes an idle function down one step per interval.
func toZero(b *testing.B, s *framework.APIServer, fn string) {
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: function.LabelFunc + "=" + fn})
		ep, eerr := s.Client.Endpoints("default").Get(ctx, function.ObjectName(fn))
		noAddr := eerr != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0
		if err == nil && len(pods) == 0 && noAddr {
			return
		}
		if time.Now().After(deadline) {
			f, ferr := s.Client.Funcs("default").Get(ctx, fn)
			if ferr != nil {
				b.Fatalf("function %s did not get to zero pods: %d pods; %v", fn, len(pods), ferr)
			}
			b.Fatalf("function %s did not get to zero pods: %d pods, counter %d, last call %v, endpoints listed %v",
				fn, len(pods), f.Status.Counter, f.Status.TimeStamp, !noAddr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
