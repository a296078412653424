package test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/scheduler"
	"minik8s/test/framework"
)

// cluster starts a one-node cluster on a private containerd with the
// function runtime image, with scale-to-zero flags short enough for tests.
func cluster(t *testing.T) *framework.APIServer {
	t.Helper()
	ctd := framework.StartContainerd(t)
	ctd.ImportFunctionRuntime(t)
	s := framework.StartAPIServer(t)
	framework.StartControllers(t, s, controller.Config{FuncScaleInterval: time.Second, FuncIdleWindow: 2 * time.Second})
	framework.StartScheduler(t, s, scheduler.Config{})
	framework.StartKubelet(t, s.URL, ctd, "node-e2e", "127.0.0.21")
	return s
}

func syncInvoke(t *testing.T, s *framework.APIServer, fn, arg string) api.FuncInstanceView {
	t.Helper()
	code, data := httpDo(t, "POST", s.URL+"/api/funcs/"+fn+"?wait=120s", "application/x-www-form-urlencoded", []byte(arg))
	if code != http.StatusOK && code != http.StatusAccepted {
		t.Fatalf("call %s: %d %s", fn, code, data)
	}
	var id struct {
		InstanceID string `json:"instanceId"`
	}
	_ = json.Unmarshal(data, &id)
	return result(t, s, id.InstanceID, 120*time.Second)
}

func TestE2EFunctionsOnContainerd(t *testing.T) {
	s := cluster(t)
	ctx := context.Background()
	funcTemplate(t, s, "append_world", "def run(arg):\n    print('got', arg)\n    return arg + ' world'\n", "RETURN", "RETURN",
		map[string]any{"initInstanceNum": 1, "minInstanceNum": 0, "maxInstanceNum": 3})
	funcTemplate(t, s, "classify", checkerCode, "lefty", "righty", nil)
	funcTemplate(t, s, "lefty", leftCode, "RETURN", "RETURN", nil)
	funcTemplate(t, s, "righty", rightCode, "RETURN", "RETURN", nil)

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
	rsName := function.ObjectName("append_world")
	var seen []int32
	events := s.Client.ReplicaSets("default").Watch(ctx, client.ListOptions{FieldSelector: "metadata.name=" + rsName})
	deadline := time.After(60 * time.Second)
	for len(seen) == 0 || seen[len(seen)-1] != 0 {
		select {
		case ev := <-events:
			if r := *ev.Object.Spec.Replicas; len(seen) == 0 || seen[len(seen)-1] != r {
				if len(seen) > 0 && seen[len(seen)-1]-r > 1 {
					t.Fatalf("replicas dropped by more than one step: %v then %d", seen, r)
				}
				seen = append(seen, r)
			}
		case <-deadline:
			t.Fatalf("pool did not scale to zero: %v", seen)
		}
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
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = syncInvoke(t, s, "append_world", fmt.Sprintf("cold%d", i))
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		if r.Status != api.InstanceSucceeded || r.Result != fmt.Sprintf("cold%d world", i) || len(r.Steps) != 1 {
			t.Fatalf("cold call %d: %+v", i, r)
		}
	}
}

func TestE2EFunctionV1FreshPodPerStep(t *testing.T) {
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
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
