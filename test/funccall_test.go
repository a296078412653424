package test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/pkg/storage/etcd"
	"minik8s/test/framework"
)

// runtime starts a real funcserver (with real python3 workers) serving
// code on a free loopback port, standing in for a function pod.
func runtime(t *testing.T, code string) int32 {
	t.Helper()
	return framework.StartFuncServer(t, code, 4)
}

// funcTemplate posts a template in the reference format.
func funcTemplate(t *testing.T, s *framework.APIServer, name, code, left, right string, extra map[string]any) {
	t.Helper()
	spec := map[string]any{"name": name, "function": base64.StdEncoding.EncodeToString([]byte(code)),
		"left": left, "right": right, "minInstanceNum": 0, "maxInstanceNum": 3}
	for k, v := range extra {
		spec[k] = v
	}
	body, _ := json.Marshal(map[string]any{"apiVersion": "v2", "kind": "Func",
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec})
	if code, data := httpDo(t, "POST", s.URL+"/api/funcs/template", "application/json", body); code != http.StatusCreated {
		t.Fatalf("create func %s: %d %s", name, code, data)
	}
}

// publish makes ports the ready endpoints of a function, as the endpoints
// controller does for the pods of the function's ReplicaSet.
func publish(t *testing.T, s *framework.APIServer, fn string, ports ...int32) {
	t.Helper()
	s.PublishFunctionPods(t, fn, ports...)
}

// invoke calls a function with a raw body and returns the instance id.
func invoke(t *testing.T, s *framework.APIServer, fn, arg string) string {
	t.Helper()
	id, err := tryInvoke(s, fn, arg)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// tryInvoke is invoke for goroutines other than the test's, which must not
// call t.Fatal: it returns the failure instead.
func tryInvoke(s *framework.APIServer, fn, arg string) (string, error) {
	resp, err := http.Post(s.URL+"/api/funcs/"+fn, "application/x-www-form-urlencoded", strings.NewReader(arg))
	if err != nil {
		return "", fmt.Errorf("call %s: %w", fn, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("call %s: %d %s", fn, resp.StatusCode, data)
	}
	var out struct {
		InstanceID string `json:"instanceId"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.InstanceID == "" {
		return "", fmt.Errorf("call answer %s: %v", data, err)
	}
	return out.InstanceID, nil
}

// result polls GET /api/funcs/:id until the instance ends.
func result(t *testing.T, s *framework.APIServer, id string, within time.Duration) api.FuncInstanceView {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, data := httpDo(t, "GET", s.URL+"/api/funcs/"+id, "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET instance %s: %d %s", id, code, data)
		}
		var v api.FuncInstanceView
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		if v.Status == api.InstanceSucceeded || v.Status == api.InstanceFailed {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s still %s after %s", id, v.Status, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const (
	checkerCode = `
def run(arg):
    print("checking", arg)
    return arg.strip()

def check(ret):
    return ret.startswith("a")
`
	leftCode  = "def run(arg):\n    return 'L:' + arg\n"
	rightCode = "def run(arg):\n    return {'right': arg}\n"
	countdown = `
def run(arg):
    return str(int(arg) - 1)

def check(ret):
    return int(ret) > 0
`
)

func TestFuncChainBranchesAndLoop(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	funcTemplate(t, s, "checker", checkerCode, "lefty", "righty", nil)
	funcTemplate(t, s, "lefty", leftCode, "RETURN", "RETURN", nil)
	funcTemplate(t, s, "righty", rightCode, "RETURN", "RETURN", nil)
	funcTemplate(t, s, "countdown", countdown, "countdown", "RETURN", nil)
	publish(t, s, "checker", runtime(t, checkerCode))
	publish(t, s, "lefty", runtime(t, leftCode))
	publish(t, s, "righty", runtime(t, rightCode))
	publish(t, s, "countdown", runtime(t, countdown))

	v := result(t, s, invoke(t, s, "checker", "apple"), 30*time.Second)
	if v.Status != api.InstanceSucceeded || v.Result != "L:apple" || len(v.Steps) != 2 {
		t.Fatalf("left branch: %+v", v)
	}
	first := v.Steps[0]
	if first.Function != "checker" || first.Check == nil || !*first.Check || first.Output != "checking apple\n" ||
		first.Pod == "" || first.Node != "node-a" || v.Steps[1].Function != "lefty" {
		t.Fatalf("step records: %+v", v.Steps)
	}
	v = result(t, s, invoke(t, s, "checker", "banana"), 30*time.Second)
	if v.Status != api.InstanceSucceeded || v.Result != `{"right": "banana"}` || v.Steps[0].Check == nil || *v.Steps[0].Check {
		t.Fatalf("right branch (non-string result JSON-encoded): %+v", v)
	}
	v = result(t, s, invoke(t, s, "countdown", "5"), 30*time.Second)
	if v.Status != api.InstanceSucceeded || v.Result != "0" || len(v.Steps) != 5 {
		t.Fatalf("loop: %+v", v)
	}

	// ?wait= answers with the finished instance.
	code, data := httpDo(t, "POST", s.URL+"/api/funcs/checker?wait=30s", "text/plain", []byte("avocado"))
	if code != http.StatusOK || !strings.Contains(string(data), `"result":"L:avocado"`) {
		t.Fatalf("sync call: %d %s", code, data)
	}

	// The reference design's step call (PUT /api/funcs/NAME/ID) never
	// rewrites a finished instance: its result is final.
	id := invoke(t, s, "lefty", "x")
	result(t, s, id, 30*time.Second)
	for _, path := range []string{"/api/funcs/RETURN/" + id, "/api/funcs/lefty/" + id + "?wait=30s"} {
		if code, data := httpDo(t, "PUT", s.URL+path, "", []byte("stored")); code != http.StatusConflict {
			t.Fatalf("PUT %s on a finished instance: %d %s, want 409", path, code, data)
		}
	}
	if v := result(t, s, id, 10*time.Second); v.Result != "L:x" {
		t.Fatalf("after PUTs on a finished instance: %+v", v)
	}

	// The runner reports the calls it started, for the function controller
	// to turn into the counter.
	waitDemand(t, s, "checker", func(d function.FuncDemand) bool { return d.Started >= 3 && d.LastCall != nil })
}

// waitDemand waits until the runners' demand reports for fn, summed, satisfy ok.
func waitDemand(t *testing.T, s *framework.APIServer, fn string, ok func(function.FuncDemand) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a bound, not a guess: the runner publishes its demand with its lease, late under load
	for {
		leases, _, err := s.Client.Leases(function.RunnerNamespace).List(context.Background(), client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var sum function.FuncDemand
		for _, l := range leases {
			d := function.RunnerDemand(l).Functions["default/"+fn]
			sum.Started += d.Started
			sum.InFlight += d.InFlight
			sum.Peak += d.Peak
			sum.Waiting += d.Waiting
			if d.LastCall != nil {
				sum.LastCall = d.LastCall
			}
		}
		if ok(sum) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("runners' demand for %s: %+v", fn, sum)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFuncFailuresAreAnswers(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	raises := "def run(arg):\n    return 1 / 0\n"
	sleeper := "import time\ndef run(arg):\n    time.sleep(3600)\n"
	forever := "def run(arg):\n    return arg\n"
	funcTemplate(t, s, "raises", raises, "RETURN", "RETURN", nil)
	funcTemplate(t, s, "sleeper", sleeper, "RETURN", "RETURN", map[string]any{"timeoutSeconds": 1})
	funcTemplate(t, s, "dangling", forever, "missing_fn", "RETURN", nil)
	funcTemplate(t, s, "forever", forever, "forever", "forever", nil)
	publish(t, s, "raises", runtime(t, raises))
	publish(t, s, "sleeper", runtime(t, sleeper))
	publish(t, s, "dangling", runtime(t, forever))
	publish(t, s, "forever", runtime(t, forever))

	for _, tc := range []struct{ fn, want string }{
		{"raises", "ZeroDivisionError"},
		{"sleeper", "Timeout"},
		{"dangling", `function "missing_fn" not found (called by "dangling")`},
		{"forever", "hop limit of 100 reached"},
	} {
		v := result(t, s, invoke(t, s, tc.fn, "x"), 60*time.Second)
		if v.Status != api.InstanceFailed || !strings.Contains(v.Error, tc.want) {
			t.Errorf("%s: status %s error %q, want Failed with %q", tc.fn, v.Status, v.Error, tc.want)
		}
	}
	// A failed step keeps its trace.
	v := result(t, s, invoke(t, s, "raises", "x"), 30*time.Second)
	if len(v.Steps) != 1 || !strings.Contains(v.Steps[0].Error, "Traceback") {
		t.Errorf("failed step record: %+v", v.Steps)
	}
	// Calling an unknown function is refused at once.
	code, data := httpDo(t, "POST", s.URL+"/api/funcs/nobody", "", []byte("x"))
	if code != http.StatusNotFound || !strings.Contains(string(data), `function \"nobody\" not found`) {
		t.Errorf("unknown function: %d %s", code, data)
	}
	if code, _ := httpDo(t, "GET", s.URL+"/api/funcs/no-such-instance", "", nil); code != http.StatusNotFound {
		t.Errorf("unknown instance: %d", code)
	}
}

func TestFuncColdStartManyCalls(t *testing.T) {
	t.Parallel()
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	logFile := filepath.Join(t.TempDir(), "calls.log")
	code := fmt.Sprintf(`
import fcntl
def run(arg):
    with open(%q, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(arg + "\n")
    return "done " + arg
`, logFile)
	funcTemplate(t, s, "cold", code, "RETURN", "RETURN", map[string]any{"maxInstanceNum": 5, "initInstanceNum": 0})

	// 200 calls arrive while no pod is ready.
	const calls = 200
	ids := make([]string, calls)
	var wg sync.WaitGroup
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id, err := tryInvoke(s, "cold", fmt.Sprintf("call-%03d", i))
			if err != nil {
				t.Errorf("call %d: %v", i, err) // Errorf, not Fatalf: not the test's goroutine
				return
			}
			ids[i] = id
		}(i)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// The runner reports the calls waiting for a pod at once, so the pool
	// scales up.
	waitDemand(t, s, "cold", func(d function.FuncDemand) bool { return d.Waiting == calls && d.Started == calls })
	publish(t, s, "cold", runtime(t, code), runtime(t, code))

	for i, id := range ids {
		v := result(t, s, id, 60*time.Second)
		if v.Status != api.InstanceSucceeded || string(v.Result) != fmt.Sprintf("done call-%03d", i) {
			t.Fatalf("call %d: %+v", i, v)
		}
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	sort.Strings(lines)
	if len(lines) != calls {
		t.Fatalf("%d runs for %d calls", len(lines), calls)
	}
	for i, l := range lines {
		if l != fmt.Sprintf("call-%03d", i) {
			t.Fatalf("run %d is %q: a call ran twice or not at all", i, l)
		}
	}
}

func TestFuncChainSurvivesAPIServerRestart(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	slow := "import time\ndef run(arg):\n    time.sleep(1.5)\n    return arg + '+slow'\n"
	fast := "def run(arg):\n    return arg + '+fast'\n"
	funcTemplate(t, s, "slow", slow, "fast", "fast", nil)
	funcTemplate(t, s, "fast", fast, "RETURN", "RETURN", nil)
	publish(t, s, "slow", runtime(t, slow))
	publish(t, s, "fast", runtime(t, fast))

	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, invoke(t, s, "slow", fmt.Sprintf("a%d", i)))
	}
	time.Sleep(300 * time.Millisecond) // mid-step
	s.Restart()
	for i, id := range ids {
		v := result(t, s, id, 60*time.Second)
		if v.Status != api.InstanceSucceeded || string(v.Result) != fmt.Sprintf("a%d+slow+fast", i) {
			t.Fatalf("instance %d after restart: %+v", i, v)
		}
	}
	// The instance record is in etcd, with a TTL: its key is attached to a
	// lease of about an hour (FuncInstanceTTL's default, plus the lease
	// sharing window), kept through the updates of the chain and the restart.
	if _, err := s.Client.FuncInstances("default").Get(context.Background(), ids[0]); err != nil {
		t.Fatalf("instance record: %v", err)
	}
	instKey := "/registry/" + api.FuncInstancesResource.Name + "/default/" + ids[0]
	funcKey := "/registry/" + api.FuncsResource.Name + "/default/slow"
	leases := etcdLeases(t, s, instKey, funcKey)
	if leases[funcKey].id != 0 {
		t.Errorf("the function object has lease %x: only instances expire", leases[funcKey].id)
	}
	l := leases[instKey]
	if l.id == 0 {
		t.Fatalf("instance key %s has no lease: it would never expire", instKey)
	}
	if l.granted < time.Hour || l.granted > 70*time.Minute || l.remaining <= 0 || l.remaining > l.granted {
		t.Errorf("instance lease %x: granted %s, remaining %s; want about 1h", l.id, l.granted, l.remaining)
	}
}

type etcdLease struct {
	id                 clientv3.LeaseID
	granted, remaining time.Duration
}

// etcdLeases reads the lease of each key straight from the apiserver's
// etcd. The embedded etcd's client port is not published, so the apiserver
// is stopped and its data dir opened by an etcd of our own; the apiserver
// stays stopped.
func etcdLeases(t *testing.T, s *framework.APIServer, keys ...string) map[string]etcdLease {
	t.Helper()
	s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := etcd.StartEmbedded(ctx, filepath.Join(s.DataDir, "etcd"))
	if err != nil {
		t.Fatalf("opening the apiserver's etcd: %v", err)
	}
	defer e.Close()
	c, err := etcd.NewClient(e.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := map[string]etcdLease{}
	for _, k := range keys {
		resp, err := c.Get(ctx, k)
		if err != nil {
			t.Fatalf("get %s: %v", k, err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("key %s not in etcd (%d kvs)", k, len(resp.Kvs))
		}
		l := etcdLease{id: clientv3.LeaseID(resp.Kvs[0].Lease)}
		if l.id != 0 {
			ttl, err := c.TimeToLive(ctx, l.id)
			if err != nil {
				t.Fatalf("lease %x of %s: %v", l.id, k, err)
			}
			l.granted = time.Duration(ttl.GrantedTTL) * time.Second
			l.remaining = time.Duration(ttl.TTL) * time.Second
		}
		out[k] = l
	}
	return out
}

// TestStepCallKeepsTheRunningStep: a step call (PUT /api/funcs/RETURN/ID)
// on a call whose step is running ends it with the step call's result,
// and the step that was running stays in the record, marked superseded
// with its own outcome, instead of vanishing.
func TestStepCallKeepsTheRunningStep(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	code := "import time\n\ndef run(arg):\n    time.sleep(5)\n    return 'slept ' + arg\n"
	funcTemplate(t, s, "sleeper", code, "RETURN", "RETURN", nil)
	publish(t, s, "sleeper", runtime(t, code))
	id := invoke(t, s, "sleeper", "x")
	waitDemand(t, s, "sleeper", func(d function.FuncDemand) bool { return d.InFlight >= 1 })
	if code, data := httpDo(t, "PUT", s.URL+"/api/funcs/RETURN/"+id, "text/plain", []byte("stopped")); code != http.StatusAccepted {
		t.Fatalf("PUT RETURN on a running call: %d %s", code, data)
	}
	v := result(t, s, id, 30*time.Second)
	if v.Status != api.InstanceSucceeded || v.Result != "stopped" || len(v.Steps) != 1 ||
		!v.Steps[0].Superseded || v.Steps[0].Function != "sleeper" || v.Steps[0].Result != "slept x" {
		t.Fatalf("after a step call during a step: %s %q with steps %+v, want Succeeded \"stopped\" keeping the superseded step", v.Status, v.Result, v.Steps)
	}
}

// runRunner runs a function runner with cfg until the test ends; one that
// ends with an error fails the test.
func runRunner(t *testing.T, cfg funcrunner.Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- funcrunner.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runner %s: %v", cfg.Identity, err)
		}
	})
}
