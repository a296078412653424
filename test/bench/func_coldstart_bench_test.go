package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// BenchmarkFuncScaleFromZero measures a call to a function with no pod, to
// its first result: the counter rises, the ReplicaSet scales up, the pod is
// scheduled, started on containerd and probed ready, and the call runs.
// Between runs the function goes back to zero pods as an idle function
// does (a short idle window). Three clusters take turns in one run: one
// whose pods share their node's network, one whose pods have their own
// (kubelet and runner in a node's namespace, the runner calling pods by pod
// IP), and one as the second with a warm pool (issue 28: the first call
// specialises a warm generic pod made before it). At least 20 runs each,
// then as many bare `python3 -c pass` starts, the floor a cold start is
// compared with.
func BenchmarkFuncScaleFromZero(b *testing.B) {
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportFunctionRuntime(b)
	// A short idle window: the function scales back to zero soon after
	// each call (the calls waiting for a pod hold it at one meanwhile).
	cc := controller.Config{FuncScaleInterval: 100 * time.Millisecond, FuncIdleWindow: 500 * time.Millisecond}
	host := framework.StartAPIServer(b)
	framework.StartFuncRunner(b, host)
	framework.StartControllers(b, host, cc)
	framework.StartScheduler(b, host, scheduler.Config{})
	framework.StartKubelet(b, host.URL, ctd, "node-bench", "127.0.0.31")

	u := framework.StartUnderlay(b, 1)
	own := u.StartAPIServer(b, nil)
	framework.StartNetFuncRunner(b, u.Nodes[0], own)
	framework.StartControllers(b, own, cc)
	framework.StartScheduler(b, own, scheduler.Config{})
	framework.StartNetKubelet(b, u.Nodes[0], own, ctd, "node-bench-own")

	// The same on a node of its own, with a warm pool of one pod (as
	// minik8s up keeps): the runner, holding its certificate of the
	// cluster CA as a node's does, specialises the warm pod.
	wu := framework.StartUnderlay(b, 1)
	cp := wu.ControlPlane(b)
	warm := wu.StartSecureAPIServer(b, cp)
	framework.StartSecureNetFuncRunner(b, wu.Nodes[0], warm, framework.AdvertisedURL(warm, cp))
	wcc := cc
	wcc.WarmPoolSize = 1
	framework.StartControllers(b, warm, wcc)
	framework.StartScheduler(b, warm, scheduler.Config{})
	framework.StartNetKubelet(b, wu.Nodes[0], warm, ctd, "node-bench-warm")

	ctx := context.Background()
	zero := 0
	clusters := map[string]*framework.APIServer{"host": host, "own": own, "warm": warm}
	for _, s := range clusters {
		f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: "cold"},
			Spec: api.FuncSpec{Name: "cold", Function: base64.StdEncoding.EncodeToString([]byte(echoCode)),
				MinInstanceNum: &zero, InitInstanceNum: &zero}}
		if _, err := s.Client.Funcs("default").Create(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
	runs := max(b.N, 20)
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for i := 0; i < runs; i++ {
		for _, network := range []string{"host", "own", "warm"} {
			s := clusters[network]
			// All at zero: the other's pod is not being torn down
			// meanwhile (its kubelet deletes it once it has); the warm
			// pool refilled and ready.
			b.StopTimer()
			toZero(b, host, "cold")
			toZero(b, own, "cold")
			toZero(b, warm, "cold")
			warmPods(b, warm, 1)
			b.StartTimer()
			t0 := time.Now()
			v := syncCall(b, s, "cold", fmt.Sprintf("run-%d", i))
			lat[network] = append(lat[network], time.Since(t0))
			if string(v.Result) != fmt.Sprintf("run-%d", i) {
				b.Fatalf("result %q", v.Result)
			}
		}
	}
	b.StopTimer()
	// A bare Python start beside it, as the runtime image's interpreter.
	var bare []time.Duration
	for range runs {
		t0 := time.Now()
		if err := exec.Command("/usr/bin/python3", "-c", "pass").Run(); err != nil {
			b.Fatalf("python3 -c pass: %v", err)
		}
		bare = append(bare, time.Since(t0))
	}
	b.ReportMetric(percentile(lat["warm"], 50), "warm-pool-cold-p50-ms")
	b.ReportMetric(percentile(lat["warm"], 99), "warm-pool-cold-p99-ms")
	b.ReportMetric(percentile(bare, 50), "python3-c-pass-p50-ms")
	b.ReportMetric(percentile(lat["warm"], 50)/percentile(bare, 50), "warm-vs-python-start-ratio")
	b.ReportMetric(percentile(lat["own"], 50)/percentile(bare, 50), "own-vs-python-start-ratio")
	b.ReportMetric(percentile(lat["host"], 50), "cold-p50-ms")
	b.ReportMetric(percentile(lat["host"], 99), "cold-p99-ms")
	b.ReportMetric(percentile(lat["own"], 50), "own-network-cold-p50-ms")
	b.ReportMetric(percentile(lat["own"], 99), "own-network-cold-p99-ms")
	b.ReportMetric(percentile(lat["own"], 50)/percentile(lat["host"], 50), "own-vs-host-ratio")
	b.ReportMetric(float64(runs), "runs")
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
