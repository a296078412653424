package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// BenchmarkFuncBrokenCode measures how long the first call of a function
// whose code cannot start (a syntax error) takes to fail, from zero pods:
// the pod is made and started, funcserver's import fails and it exits
// with the cause, the controller sets the Func's Ready condition, and the
// runner fails the waiting call naming the cause (it waited out the whole
// cold start timeout, 2 minutes, before). Side by side in the same run:
// the cold start of a good function, the path the failure shares. Pods on
// their own network; at least 5 runs each.
func BenchmarkFuncBrokenCode(b *testing.B) {
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportFunctionRuntime(b)
	u := framework.StartUnderlay(b, 1)
	s := u.StartAPIServer(b, nil)
	framework.StartNetFuncRunner(b, u.Nodes[0], s)
	framework.StartControllers(b, s, controller.Config{FuncScaleInterval: 100 * time.Millisecond, FuncIdleWindow: 500 * time.Millisecond})
	framework.StartScheduler(b, s, scheduler.Config{})
	framework.StartNetKubelet(b, u.Nodes[0], s, ctd, "node-broken")

	ctx := context.Background()
	zero := 0
	for name, code := range map[string]string{"broken": "def run(arg)\n    return arg\n", "good": echoCode} {
		f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: name},
			Spec: api.FuncSpec{Name: name, Function: base64.StdEncoding.EncodeToString([]byte(code)),
				MinInstanceNum: &zero, InitInstanceNum: &zero}}
		if _, err := s.Client.Funcs("default").Create(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
	runs := max(b.N, 5)
	var broken, good []time.Duration
	b.ResetTimer()
	for i := 0; i < runs; i++ {
		b.StopTimer()
		toZero(b, s, "broken")
		toZero(b, s, "good")
		b.StartTimer()
		t0 := time.Now()
		v := callView(b, s, "broken")
		broken = append(broken, time.Since(t0))
		if v.Status != api.InstanceFailed || !strings.Contains(v.Error, "SyntaxError") {
			b.Fatalf("broken call: %s %q", v.Status, v.Error)
		}
		t0 = time.Now()
		if v := callView(b, s, "good"); v.Status != api.InstanceSucceeded {
			b.Fatalf("good call: %+v", v)
		}
		good = append(good, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(percentile(broken, 50), "broken-error-p50-ms")
	b.ReportMetric(percentile(broken, 99), "broken-error-max-ms")
	b.ReportMetric(percentile(good, 50), "good-cold-p50-ms")
}

// callView makes a synchronous call and returns its view, failed or not.
func callView(b *testing.B, s *framework.APIServer, fn string) api.FuncInstanceView {
	b.Helper()
	resp, err := http.Post(s.URL+"/api/funcs/"+fn+"?wait=150s", "text/plain", strings.NewReader("x"))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var v api.FuncInstanceView
	if err := json.Unmarshal(data, &v); err != nil {
		b.Fatal(fmt.Errorf("call %s: %d %s", fn, resp.StatusCode, data))
	}
	return v
}
