package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// syncCall calls fn with body and waits for its end.
func syncCall(t *testing.T, s *framework.APIServer, fn string, body []byte) (int, api.FuncInstanceView, []byte) {
	t.Helper()
	code, data := httpDo(t, "POST", s.URL+"/api/funcs/"+fn+"?wait=60s", "application/octet-stream", body)
	var v api.FuncInstanceView
	if code == http.StatusOK {
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("answer of %s: %v", fn, err)
		}
	}
	return code, v, data
}

// countLines counts the runs a function logged to path.
func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// logRun is python that appends a line to path each time run is called.
func logRun(path string) string {
	return fmt.Sprintf(`
import fcntl
def log_run():
    with open(%q, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write("run\n")
`, path)
}

// TestFuncLimits: arguments and results up to the limit work whatever
// they contain; above it an argument is 413 and a result fails the call,
// each naming the size and the limit; a step whose outcome etcd refuses
// ends the instance Failed, run once (TestFuncUnrecordableStep).
func TestFuncLimits(t *testing.T) {
	// Long, and on a cluster of its own: it runs beside the other such tests.
	t.Parallel()
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	const limit = 512 << 10
	echo := "def run(arg):\n    return arg\n"
	lt := "def run(arg):\n    return '<' * 400000\n"
	huge := fmt.Sprintf("def run(arg):\n    return 'x' * %d\n", limit+1)
	for _, f := range []struct{ name, code, left string }{
		{"echo", echo, "RETURN"}, {"lt", lt, "RETURN"}, {"huge", huge, "RETURN"},
		{"chatty", "def run(arg):\n    print('x' * int(arg))\n    return 'ok'\n", "RETURN"},
	} {
		funcTemplate(t, s, f.name, f.code, f.left, f.left, nil)
		s.PublishFunctionPods(t, f.name, runtime(t, f.code))
	}

	t.Run("argument at the limit whatever it contains", func(t *testing.T) {
		for _, arg := range []string{strings.Repeat("<", limit), strings.Repeat("\x01", limit), strings.Repeat("<", 300_000)} {
			code, v, data := syncCall(t, s, "echo", []byte(arg))
			if code != http.StatusOK || v.Status != api.InstanceSucceeded || string(v.Result) != arg {
				if len(data) > 300 {
					data = data[:300]
				}
				t.Errorf("argument of %d bytes (%q...): %d %s, result of %d bytes", len(arg), arg[:1], code, data, len(v.Result))
			}
		}
	})
	t.Run("argument above the limit is 413", func(t *testing.T) {
		code, _, data := syncCall(t, s, "echo", []byte(strings.Repeat("<", limit+1)))
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), fmt.Sprint(limit+1)) ||
			!strings.Contains(string(data), fmt.Sprint(limit)) {
			t.Errorf("argument of %d bytes: %d %s, want 413 naming the size and the limit", limit+1, code, data)
		}
	})
	t.Run("result of 400 KB of < is stored", func(t *testing.T) {
		code, v, data := syncCall(t, s, "lt", []byte("x"))
		if code != http.StatusOK || v.Status != api.InstanceSucceeded || string(v.Result) != strings.Repeat("<", 400000) {
			if len(data) > 300 {
				data = data[:300]
			}
			t.Errorf("400 KB of <: %d %s", code, data)
		}
	})
	t.Run("output is kept up to 1 MiB, every cut byte counted", func(t *testing.T) {
		for _, tc := range []struct{ printed, kept, dropped int }{
			{printed: 100_000, kept: 100_001},
			{printed: 1_500_000, kept: 1 << 20, dropped: 1_500_001 - 1<<20},
		} {
			code, v, data := syncCall(t, s, "chatty", []byte(fmt.Sprint(tc.printed)))
			if code != http.StatusOK || v.Status != api.InstanceSucceeded || len(v.Steps) != 1 {
				t.Fatalf("printing %d bytes: %d %.300s", tc.printed, code, data)
			}
			out := v.Steps[0].Output
			if tc.dropped > 0 {
				var ok bool
				if out, ok = strings.CutSuffix(out, function.OutputNote(int64(tc.dropped))); !ok {
					t.Errorf("printing %d bytes: the record's output does not end with the note of %d bytes cut: ...%q", tc.printed, tc.dropped, out[max(len(out)-80, 0):])
				}
			}
			if len(out) != tc.kept || strings.Trim(out, "x\n") != "" {
				t.Errorf("printing %d bytes: the record kept %d bytes of output, want %d", tc.printed, len(out), tc.kept)
			}
		}
	})
	t.Run("result above the limit fails the call", func(t *testing.T) {
		v := result(t, s, invoke(t, s, "huge", "x"), 60*time.Second)
		if v.Status != api.InstanceFailed || !strings.Contains(v.Error, fmt.Sprint(limit+1)) || !strings.Contains(v.Error, fmt.Sprint(limit)) {
			t.Errorf("result of %d bytes: %s %q, want Failed naming the size and the limit", limit+1, v.Status, v.Error)
		}
	})
}

// TestFuncUnrecordableStep: a step whose outcome is too large to store
// ends the instance Failed, saying so and its size, and is run once. Its
// runner writes instances of at most 1 MiB (Config.MaxInstanceBytes), so
// the chain outgrows a write in a few hops of a fraction of the data the
// default 7 MiB would take: the same path, light enough for a loaded machine.
func TestFuncUnrecordableStep(t *testing.T) {
	t.Parallel()
	s := framework.StartAPIServer(t)
	framework.StartFuncRunnerWith(t, s, func(c *funcrunner.Config) { c.MaxInstanceBytes = 1 << 20 })
	growLog := filepath.Join(t.TempDir(), "grow.log")
	// Called with 32 KiB of control characters (6 bytes each once
	// JSON-escaped) that every hop passes on, the instance holds 384 KiB
	// of argument and next argument, and each hop records over 100 KiB of
	// output more: it outgrows the runner's 1 MiB within a few hops, long
	// before the hop limit.
	grow := logRun(growLog) + "\ndef run(arg):\n    log_run()\n    print('\\x01' * 20000)\n    return arg\n"
	funcTemplate(t, s, "grow", grow, "grow", "grow", nil)
	s.PublishFunctionPods(t, "grow", runtime(t, grow))

	v := result(t, s, invoke(t, s, "grow", strings.Repeat("\x01", 32<<10)), 5*time.Minute)
	if v.Status != api.InstanceFailed || !strings.Contains(v.Error, "could not be recorded") || !strings.Contains(v.Error, "bytes once encoded") {
		t.Fatalf("growing chain: %s %q, want Failed saying the outcome could not be recorded and its size", v.Status, v.Error)
	}
	runs := countLines(t, growLog)
	t.Logf("the chain ran %d hops before its outcome outgrew a write", runs)
	if len(v.Steps) == 0 || runs != len(v.Steps) {
		t.Errorf("%d runs for %d recorded steps: a step ran again", runs, len(v.Steps))
	}
	// Nothing runs after the end.
	time.Sleep(time.Second)
	if again := countLines(t, growLog); again != runs {
		t.Errorf("%d runs after the instance ended, %d at its end", again, runs)
	}
}

// TestFuncForgery: instances are made and changed only by calls, a
// finished one is final, and only the function's own pods get its calls.
func TestFuncForgery(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	echo := "def run(arg):\n    return 'real:' + arg\n"
	funcTemplate(t, s, "victim", echo, "RETURN", "RETURN", nil)
	realPort := runtime(t, echo)
	s.PublishFunctionPods(t, "victim", realPort)

	t.Run("finished instance is immutable", func(t *testing.T) {
		id := invoke(t, s, "victim", "a")
		if v := result(t, s, id, 30*time.Second); v.Result != "real:a" {
			t.Fatalf("call: %+v", v)
		}
		for _, path := range []string{"/api/funcs/RETURN/" + id, "/api/funcs/victim/" + id + "?wait=10s"} {
			code, data := httpDo(t, "PUT", s.URL+path, "", []byte("forged"))
			if code != http.StatusConflict || !strings.Contains(string(data), "finished instance cannot be changed") {
				t.Errorf("PUT %s: %d %s, want 409", path, code, data)
			}
		}
		if v := result(t, s, id, 10*time.Second); v.Status != api.InstanceSucceeded || v.Result != "real:a" || len(v.Steps) != 1 {
			t.Errorf("after forged PUTs: %+v", v)
		}
	})

	t.Run("REST writes of instances are refused", func(t *testing.T) {
		base := s.URL + "/api/v1/namespaces/default/funcinstances"
		forged, _ := json.Marshal(api.FuncInstance{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "FuncInstance"},
			ObjectMeta: api.ObjectMeta{Name: "forged", Namespace: "default"},
			Spec:       api.FuncInstanceSpec{Function: "victim", Arg: "x"},
			Status:     api.FuncInstanceStatus{Phase: api.InstanceSucceeded, Result: "forged"}})
		if code, data := httpDo(t, "POST", base, "application/json", forged); code != http.StatusMethodNotAllowed ||
			!strings.Contains(string(data), "POST /api/funcs/NAME") {
			t.Errorf("POST funcinstances: %d %s, want 405 pointing to the function API", code, data)
		}
		if code, data := httpDo(t, "GET", s.URL+"/api/funcs/forged", "", nil); code != http.StatusNotFound {
			t.Errorf("forged instance reads back: %d %s", code, data)
		}
		id := invoke(t, s, "victim", "b")
		result(t, s, id, 30*time.Second)
		inst, err := s.Client.FuncInstances("default").Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		inst.Status.Result = "forged"
		body, _ := json.Marshal(inst)
		if code, data := httpDo(t, "PUT", base+"/"+id, "application/json", body); code != http.StatusMethodNotAllowed {
			t.Errorf("PUT %s: %d %s, want 405", base+"/"+id, code, data)
		}
		// The status is how runners advance instances: a finished one is final.
		if code, data := httpDo(t, "PUT", base+"/"+id+"/status", "application/json", body); code != http.StatusConflict ||
			!strings.Contains(string(data), "finished instance cannot be changed") {
			t.Errorf("PUT status of a finished instance: %d %s, want 409", code, data)
		}
		if v := result(t, s, id, 10*time.Second); v.Result != "real:b" {
			t.Errorf("after forged PUTs: %+v", v)
		}
		// Reading and deleting stay allowed.
		if _, err := s.Client.FuncInstances("default").Delete(context.Background(), id, client.DeleteOptions{}); err != nil {
			t.Errorf("delete instance: %v", err)
		}
	})

	t.Run("forged endpoints never get calls", func(t *testing.T) {
		forgedLog := filepath.Join(t.TempDir(), "forged.log")
		forger := logRun(forgedLog) + "\ndef run(arg):\n    log_run()\n    return 'forged:' + arg\n"
		forgedPort := runtime(t, forger)
		// The forger's own pod, owned by no ReplicaSet of the function.
		evil, err := s.Client.Pods("default").Create(context.Background(), &api.Pod{
			ObjectMeta: api.ObjectMeta{Name: "evil", Labels: map[string]string{function.LabelFunc: "victim"}},
			Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "minik8s/python-runtime:latest",
				Ports: []api.ContainerPort{{Name: function.PortName, ContainerPort: forgedPort}}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		evil.Status.PodIP, evil.Status.Phase = "127.0.0.1", api.PodRunning
		if evil, err = s.Client.Pods("default").UpdateStatus(context.Background(), evil); err != nil {
			t.Fatal(err)
		}
		realPod, err := s.Client.Pods("default").Get(context.Background(), fmt.Sprintf("pod-%d", realPort))
		if err != nil {
			t.Fatal(err)
		}
		addr := func(port int32, ref *api.ObjectReference) api.EndpointAddress {
			return api.EndpointAddress{IP: "127.0.0.1", Port: port, NodeName: "node-a", TargetRef: ref}
		}
		s.PutEndpoints(t, &api.Endpoints{ObjectMeta: api.ObjectMeta{Name: function.ObjectName("victim")},
			Subsets: []api.EndpointSubset{{Ports: []api.EndpointPort{{Name: function.PortName, Port: function.ServicePort}},
				Addresses: []api.EndpointAddress{
					addr(forgedPort, nil), // no pod at all
					addr(forgedPort, &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: "evil", UID: evil.UID}),
					// The real pod's name on the forger's port.
					addr(forgedPort, &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: realPod.Name, UID: realPod.UID}),
					addr(realPort, &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: realPod.Name, UID: realPod.UID}),
				}}}})
		for i := 0; i < 8; i++ {
			arg := fmt.Sprint(i)
			code, v, data := syncCall(t, s, "victim", []byte(arg))
			if code != http.StatusOK || string(v.Result) != "real:"+arg {
				t.Errorf("call %d: %d %s, want the real pod's answer", i, code, data)
			}
		}
		if n := countLines(t, forgedLog); n != 0 {
			t.Errorf("the forged endpoints got %d calls", n)
		}
	})
}
