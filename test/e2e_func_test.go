package test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// cluster starts a one-node cluster on a private containerd with the
// function runtime image, with scale-to-zero flags short enough for tests;
// pods have their own network (netCluster).
func cluster(t *testing.T) *framework.APIServer {
	t.Helper()
	return netCluster(t, "node-e2e", nil)
}

// netCluster is a one-node cluster whose pods have their own network: the
// node, its kubelet (bin/kubelet, --pod-network cni) and the function
// runner (bin/funcrunner, which reaches the pods at their addresses) in a
// namespace of an underlay; apiserver, controllers and scheduler in the
// test process. prepare (if any) readies the containerd further.
func netCluster(t *testing.T, name string, prepare func(*containerdtest.Containerd)) *framework.APIServer {
	t.Helper()
	s, _ := netClusterRunner(t, name, prepare)
	return s
}

// netClusterRunner is netCluster, with its function runner.
func netClusterRunner(t *testing.T, name string, prepare func(*containerdtest.Containerd)) (*framework.APIServer, *framework.NetFuncRunner) {
	t.Helper()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportFunctionRuntime(t)
	if prepare != nil {
		prepare(ctd)
	}
	u := framework.StartUnderlay(t, 1)
	s := u.StartAPIServer(t, nil)
	runner := framework.StartNetFuncRunner(t, u.Nodes[0], s)
	framework.StartControllers(t, s, controller.Config{FuncScaleInterval: time.Second, FuncIdleWindow: 2 * time.Second})
	framework.StartScheduler(t, s, scheduler.Config{})
	framework.StartNetKubelet(t, u.Nodes[0], s, ctd, name)
	return s, runner
}

// clusterWith is cluster() on node name at ip; prepare (if any) readies the
// containerd further (more images), runner (if any) configures the runner.
func clusterWith(t *testing.T, name, ip string, prepare func(*containerdtest.Containerd), runner func(*funcrunner.Config)) *framework.APIServer {
	t.Helper()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportFunctionRuntime(t)
	if prepare != nil {
		prepare(ctd)
	}
	s := framework.StartAPIServer(t)
	framework.StartFuncRunnerWith(t, s, runner)
	framework.StartControllers(t, s, controller.Config{FuncScaleInterval: time.Second, FuncIdleWindow: 2 * time.Second})
	framework.StartScheduler(t, s, scheduler.Config{})
	framework.StartKubelet(t, s.URL, ctd, name, ip)
	return s
}

func syncInvoke(t *testing.T, s *framework.APIServer, fn, arg string) api.FuncInstanceView {
	t.Helper()
	v, err := trySyncInvoke(s, fn, arg, 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// trySyncInvoke calls fn and waits for its result; it reports failures as errors so
// that goroutines can use it (only the test's goroutine may stop the test).
func trySyncInvoke(s *framework.APIServer, fn, arg string, within time.Duration) (api.FuncInstanceView, error) {
	var v api.FuncInstanceView
	resp, err := http.Post(s.URL+"/api/funcs/"+fn+"?wait="+within.String(), "application/x-www-form-urlencoded", strings.NewReader(arg))
	if err != nil {
		return v, fmt.Errorf("call %s: %w", fn, err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		return v, fmt.Errorf("call %s: %d %s", fn, resp.StatusCode, data)
	}
	var id struct {
		InstanceID string `json:"instanceId"`
	}
	if err := json.Unmarshal(data, &id); err != nil || id.InstanceID == "" {
		return v, fmt.Errorf("call %s: no instance id in %s", fn, data)
	}
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(s.URL + "/api/funcs/" + id.InstanceID)
		if err != nil {
			return v, fmt.Errorf("instance %s: %w", id.InstanceID, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return v, fmt.Errorf("GET instance %s: %d %s", id.InstanceID, resp.StatusCode, data)
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return v, fmt.Errorf("instance %s: %w", id.InstanceID, err)
		}
		if v.Status == api.InstanceSucceeded || v.Status == api.InstanceFailed {
			return v, nil
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("instance %s still %s after %s", id.InstanceID, v.Status, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestE2EFunctionsOnContainerd(t *testing.T) {
	t.Parallel()
	s, runner := netClusterRunner(t, "node-e2e", nil)
	ctx := context.Background()
	funcTemplate(t, s, "append_world", "def run(arg):\n    print('got', arg)\n    return arg + ' world'\n", "RETURN", "RETURN",
		map[string]any{"initInstanceNum": 1, "minInstanceNum": 0, "maxInstanceNum": 3})
	funcTemplate(t, s, "classify", checkerCode, "lefty", "righty", nil)
	funcTemplate(t, s, "lefty", leftCode, "RETURN", "RETURN", nil)
	funcTemplate(t, s, "righty", rightCode, "RETURN", "RETURN", nil)

	// Watched from the start, so that the scale-down below is seen whole.
	rsName := function.ObjectName("append_world")
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	events := s.Client.ReplicaSets("default").Watch(wctx, client.ListOptions{FieldSelector: "metadata.name=" + rsName})

	v := syncInvoke(t, s, "append_world", "hello")
	if v.Status != api.InstanceSucceeded || v.Result != "hello world" || v.Steps[0].Node != "node-e2e" ||
		!strings.HasPrefix(v.Steps[0].Pod, function.ObjectName("append_world")) || v.Steps[0].Output != "got hello\n" {
		t.Fatalf("first call: %+v", v)
	}
	if v := syncInvoke(t, s, "classify", "apple"); v.Result != "L:apple" {
		t.Fatalf("left branch on pods: %+v", v)
	}
	if v := syncInvoke(t, s, "classify", "kiwi"); v.Result != `{"right": "kiwi"}` {
		t.Fatalf("right branch on pods: %+v", v)
	}

	// Idle: the pool goes down one step at a time to zero pods.
	if seen := followScaleDown(t, events, 0, 60*time.Second); len(seen) < 2 || seen[0] < 1 {
		t.Fatalf("replicas went %v: want them to start at initInstanceNum 1 or more and end at 0", seen)
	}
	waitFor(t, "the function's pods to go", 60*time.Second, func() bool {
		pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: function.LabelFunc + "=append_world"})
		return err == nil && len(pods) == 0
	})

	// The next calls start a pod and return the right result: 200 at once,
	// every one answered (exactly-once runs are checked with real runtimes
	// in TestFuncColdStartManyCalls).
	const calls = 200
	var wg sync.WaitGroup
	results := make([]api.FuncInstanceView, calls)
	errs := make([]error, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = trySyncInvoke(s, "append_world", fmt.Sprintf("cold%d", i), 120*time.Second)
		}(i)
	}
	wg.Wait()
	failed := 0
	for i, r := range results {
		switch {
		case errs[i] != nil:
			failed++
			if failed <= 5 {
				t.Errorf("cold call %d: %v", i, errs[i])
			}
		case r.Status != api.InstanceSucceeded || string(r.Result) != fmt.Sprintf("cold%d world", i) || len(r.Steps) != 1:
			failed++
			if failed <= 5 {
				t.Errorf("cold call %d: %+v", i, r)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d cold calls failed", failed, calls)
	}
	t.Run("BrokenFunctionsFailFast", func(t *testing.T) { checkBrokenFunctionsFailFast(t, s) })
	t.Run("ResourcesAndConfig", func(t *testing.T) { checkFuncResources(t, s) })
	t.Run("Revisions", func(t *testing.T) { checkFuncRevisions(t, s, runner.Gateway) })
}

func TestE2EFunctionV1FreshPodPerStep(t *testing.T) {
	t.Parallel()
	s := cluster(t)
	ctx := context.Background()
	body := `{"apiVersion":"v1","kind":"Func","metadata":{"name":"once"},"spec":{"name":"once","function":"` +
		b64("def run(arg):\n    return arg.upper()\n") + `","left":"after_v2"}}`
	if code, data := httpDo(t, "POST", s.URL+"/api/funcs/template", "application/json", []byte(body)); code != http.StatusCreated {
		t.Fatalf("create v1: %d %s", code, data)
	}
	// v1 and v2 functions chain into each other.
	funcTemplate(t, s, "after_v2", "def run(arg):\n    return arg + '!'\n", "RETURN", "RETURN", nil)
	v := syncInvoke(t, s, "once", "shout")
	if v.Status != api.InstanceSucceeded || v.Result != "SHOUT!" || len(v.Steps) != 2 {
		t.Fatalf("v1 then v2: %+v", v)
	}
	waitFor(t, "the step pod to be removed", 60*time.Second, func() bool {
		pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: function.LabelInstance})
		return err == nil && len(pods) == 0
	})
	// Its status says when it was last called, as a pooled function's does.
	waitFor(t, "the v1 function's last call in its status", 30*time.Second, func() bool {
		f, err := s.Client.Funcs("default").Get(ctx, "once")
		return err == nil && f.Status.TimeStamp != nil
	})
	if code, out, errOut := mk(t, "--server", s.URL, "func", "ls"); code != 0 || !regexp.MustCompile(`(?m)^once .* ago`).MatchString(out) {
		t.Errorf("mkctl func ls: %d, want once's last call:\n%s%s", code, out, errOut)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
