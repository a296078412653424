package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/pkg/podstatus"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// BenchmarkFuncColdBurst measures ten different functions called cold at
// the same time, each to its first result, on a node whose pods have their
// own network and a warm pool of ten pods (--warm-pool-size 10): each call
// specialises a warm pod of its own. Between rounds every function goes
// back to zero and the pool refills. At least 10 rounds.
func BenchmarkFuncColdBurst(b *testing.B) {
	const funcs = 10
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportFunctionRuntime(b)
	u := framework.StartUnderlay(b, 1)
	cp := u.ControlPlane(b)
	s := u.StartSecureAPIServer(b, cp)
	framework.StartSecureNetFuncRunner(b, u.Nodes[0], s, framework.AdvertisedURL(s, cp))
	framework.StartControllers(b, s, controller.Config{FuncScaleInterval: 100 * time.Millisecond, FuncIdleWindow: 500 * time.Millisecond,
		WarmPoolSize: funcs})
	framework.StartScheduler(b, s, scheduler.Config{})
	framework.StartNetKubelet(b, u.Nodes[0], s, ctd, "node-bench-burst")

	ctx := context.Background()
	zero := 0
	for i := range funcs {
		name := fmt.Sprintf("burst%d", i)
		f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: name},
			Spec: api.FuncSpec{Name: name, Function: base64.StdEncoding.EncodeToString([]byte(echoCode)),
				MinInstanceNum: &zero, InitInstanceNum: &zero}}
		if _, err := s.Client.Funcs("default").Create(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
	rounds := max(b.N, 10)
	var lat []time.Duration
	var mu sync.Mutex
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		b.StopTimer()
		for i := range funcs {
			toZero(b, s, fmt.Sprintf("burst%d", i))
		}
		warmPods(b, s, funcs)
		b.StartTimer()
		var wg sync.WaitGroup
		for i := range funcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				arg := fmt.Sprintf("r%d-%d", r, i)
				t0 := time.Now()
				v, err := trySyncCall(s, fmt.Sprintf("burst%d", i), arg)
				d := time.Since(t0)
				if err != nil || string(v.Result) != arg {
					b.Errorf("call %d: %v %q", i, err, v.Result)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(percentile(lat, 50), "cold-p50-ms")
	b.ReportMetric(percentile(lat, 99), "cold-p99-ms")
	b.ReportMetric(float64(len(lat)), "calls")
}

// warmPods waits until s has n ready warm pods in default.
func warmPods(b *testing.B, s *framework.APIServer, n int) {
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: function.LabelWarm})
		ready := 0
		for _, p := range pods {
			if p.DeletionTimestamp == nil && podstatus.IsReady(p) {
				ready++
			}
		}
		if err == nil && ready >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d warm pods ready: %v", ready, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
