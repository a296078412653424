package funcrunner

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// fakeWarmPod is a warm generic pod: a TLS specialise port answering
// code, and a call port answering the argument.
type fakeWarmPod struct {
	pod         *api.Pod
	specialised atomic.Int32
	tls         *httptest.Server
}

func newFakeWarmPod(t *testing.T, e *testEnv, name string, code int, body string) *fakeWarmPod {
	t.Helper()
	fp := &fakeWarmPod{}
	fp.tls = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != function.SpecializePath {
			http.NotFound(w, r)
			return
		}
		fp.specialised.Add(1)
		time.Sleep(20 * time.Millisecond) // the import
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(fp.tls.Close)
	calls := newFakePod(t, name, answer(func(arg string) function.Result { return function.Result{Result: api.Bytes(name + ":" + arg)} }))
	_, sp, _ := net.SplitHostPort(fp.tls.Listener.Addr().String())
	spPort, _ := strconv.Atoi(sp)
	runtime := function.Runtime(&api.FuncSpec{})
	spec := function.WarmPodSpec(runtime)
	spec.Containers[0].Ports[0].ContainerPort = calls.port
	spec.Containers[0].Ports[1].ContainerPort = int32(spPort)
	fp.pod = &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: "uid-" + name,
		Labels: map[string]string{function.LabelWarm: function.WarmRuntime(runtime)}},
		Spec: spec,
		Status: api.PodStatus{Phase: api.PodRunning, PodIP: "127.0.0.1",
			Conditions: []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}}}
	e.putPod(fp.pod)
	return fp
}

// warmEnv is a test env whose runner claims warm pods over TLS clients
// that trust the fake pods' test certificate.
func warmEnv(t *testing.T) *testEnv {
	e := newEnv(t, Config{ColdStartTimeout: 300 * time.Millisecond})
	e.s.warm = &warm{s: e.s, inflight: map[string]*claimCall{}, claimed: map[string]map[string]claimedPod{},
		hc: httptest.NewTLSServer(http.NotFoundHandler()).Client()}
	return e
}

func invokeOnce(e *testEnv, f *api.Func, arg string) (*function.Result, stepTarget, error) {
	inst := newInstance(f.Name, arg)
	return e.s.pool.invoke(e.ctx, f, newStepCall(inst, f, arg, ""))
}

// TestWarmClaim: a call that finds no pod of its function specialises a
// warm pod of its namespace and runtime and is served by it at once; a pod
// handed another function (409) is passed over; a function whose import
// fails in the pod (422) fails the call with the pod's reason and the pod
// is removed; functions that cannot use a warm pod, and calls with no warm
// pod, take the function's own pods' path.
func TestWarmClaim(t *testing.T) {
	t.Run("claimed and called", func(t *testing.T) {
		e := warmEnv(t)
		fp := newFakeWarmPod(t, e, "warm-a", http.StatusOK, `{"ready":true}`)
		f := newFunc("f", "RETURN", "RETURN")
		e.putFunc(f)
		res, tgt, err := invokeOnce(e, f, "x")
		if err != nil || res.Result != "warm-a:x" {
			t.Fatalf("got %+v, %v; want warm-a's answer", res, err)
		}
		if tgt.pod != "warm-a" || tgt.waitStart.IsZero() {
			t.Errorf("target %+v: want warm-a, with the claim as the wait", tgt)
		}
		// The next call uses the claimed pod, without a second claim.
		if res, _, err := invokeOnce(e, f, "y"); err != nil || res.Result != "warm-a:y" {
			t.Fatalf("second call: %+v, %v", res, err)
		}
		if n := fp.specialised.Load(); n != 1 {
			t.Errorf("specialised %d times, want once", n)
		}
		// Gone from the cache (the function went back to zero): no longer
		// called at its address.
		send(e, e.pods, api.Deleted, fp.pod, func() (*api.Pod, bool) { return e.s.pods.Get("default", "warm-a") })
		if got := e.s.warm.addresses("default/" + function.ObjectName("f")); len(got) != 0 {
			t.Errorf("a deleted claimed pod is still a candidate: %+v", got)
		}
	})
	t.Run("one claim for concurrent calls", func(t *testing.T) {
		e := warmEnv(t)
		fp := newFakeWarmPod(t, e, "warm-a", http.StatusOK, `{}`)
		f := newFunc("f", "RETURN", "RETURN")
		e.putFunc(f)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = e.s.warm.claim(e.ctx, f, "default/"+function.ObjectName("f"))
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if n := fp.specialised.Load(); n != 1 {
			t.Errorf("specialised %d times for concurrent claims, want once", n)
		}
	})
	t.Run("taken pod passed over", func(t *testing.T) {
		e := warmEnv(t)
		newFakeWarmPod(t, e, "warm-taken", http.StatusConflict, `{"message":"this pod serves function g already"}`)
		newFakeWarmPod(t, e, "warm-free", http.StatusOK, `{}`)
		f := newFunc("f", "RETURN", "RETURN")
		e.putFunc(f)
		if res, _, err := invokeOnce(e, f, "x"); err != nil || res.Result != "warm-free:x" {
			t.Fatalf("got %+v, %v; want warm-free's answer", res, err)
		}
	})
	t.Run("import fails", func(t *testing.T) {
		e := warmEnv(t)
		newFakeWarmPod(t, e, "warm-a", http.StatusUnprocessableEntity, `{"message":"SyntaxError: expected ':' (function.py, line 1)"}`)
		f := newFunc("f", "RETURN", "RETURN")
		e.putFunc(f)
		_, _, err := invokeOnce(e, f, "x")
		if err == nil || !strings.Contains(err.Error(), "cannot start: SyntaxError: expected ':'") {
			t.Fatalf("got %v, want the pod's reason", err)
		}
		waitFor(t, "the pod removed", func() bool {
			return slices.Contains(e.api.log(), "DELETE /api/v1/namespaces/default/pods/warm-a")
		})
	})
	t.Run("code known not to start spends no warm pod", func(t *testing.T) {
		e := warmEnv(t)
		fp := newFakeWarmPod(t, e, "warm-a", http.StatusOK, `{}`)
		f := newFunc("f", "RETURN", "RETURN", func(f *api.Func) {
			f.Generation = 2
			f.Status.Conditions = []api.FuncCondition{{Type: api.FuncReady, Status: api.ConditionFalse, ObservedGeneration: 2,
				Reason: "StartFailed", Message: "import function.py: SyntaxError"}}
		})
		e.putFunc(f)
		_, _, err := invokeOnce(e, f, "x")
		if err == nil || !strings.Contains(err.Error(), "cannot start: StartFailed") {
			t.Fatalf("got %v, want the function's start failure", err)
		}
		if n := fp.specialised.Load(); n != 0 {
			t.Errorf("specialised %d times", n)
		}
	})
	t.Run("a v1 step in a warm pod, removed after it", func(t *testing.T) {
		e := warmEnv(t)
		fp := newFakeWarmPod(t, e, "warm-a", http.StatusOK, `{}`)
		f := newFunc("f", "RETURN", "RETURN", func(f *api.Func) { f.APIVersion = api.FuncAPIVersionV1 })
		e.putFunc(f)
		inst := newInstance("f", "x")
		res, tgt, err := e.s.invokeInFreshPod(e.ctx, f, inst, newStepCall(inst, f, "x", ""))
		if err != nil || res.Result != "warm-a:x" || tgt.pod != "warm-a" {
			t.Fatalf("got %+v at %+v, %v; want warm-a's answer", res, tgt, err)
		}
		log := e.api.log()
		if !slices.Contains(log, "DELETE /api/v1/namespaces/default/pods/warm-a") || slices.Contains(log, "POST /api/v1/namespaces/default/pods") {
			t.Errorf("requests %v: want the warm pod removed and no pod made", log)
		}
		if n := fp.specialised.Load(); n != 1 {
			t.Errorf("specialised %d times", n)
		}
	})
	t.Run("labelled warm, running something else", func(t *testing.T) {
		e := warmEnv(t)
		for i, mut := range []func(*api.PodSpec){
			func(s *api.PodSpec) { s.Containers[0].Command = []string{"/bin/sh", "-c", "steal"} },
			func(s *api.PodSpec) { s.Containers[0].Image = "evil/runtime" },
			func(s *api.PodSpec) {
				s.Volumes[0] = api.Volume{Name: "code", HostPath: &api.HostPathVolumeSource{Path: "/"}}
			},
			func(s *api.PodSpec) {
				s.Containers = append(s.Containers, api.Container{Name: "sidecar", Image: "evil"})
			},
			func(s *api.PodSpec) {
				s.Containers[0].Env = append(s.Containers[0].Env, api.EnvVar{Name: "PYTHONPATH", Value: "/evil"})
			},
		} {
			fp := newFakeWarmPod(t, e, "warm-"+strconv.Itoa(i), http.StatusOK, `{}`)
			mut(&fp.pod.Spec)
			e.putPod(fp.pod)
			defer func() {
				if n := fp.specialised.Load(); n != 0 {
					t.Errorf("pod %d: specialised %d times", i, n)
				}
			}()
		}
		f := newFunc("f", "RETURN", "RETURN")
		e.putFunc(f)
		if err := e.s.warm.claim(context.Background(), f, "default/"+function.ObjectName(f.Name)); !errors.Is(err, errNoWarmPod) {
			t.Fatalf("claim: %v, want errNoWarmPod", err)
		}
	})
	for _, tc := range []struct {
		name string
		f    *api.Func
	}{
		{"image function", newFunc("f", "RETURN", "RETURN", func(f *api.Func) { f.Spec.Image = "example/img" })},
		{"timeout above a warm pod's grace", newFunc("f", "RETURN", "RETURN", func(f *api.Func) {
			f.Spec.TimeoutSeconds = new(int)
			*f.Spec.TimeoutSeconds = function.WarmTimeoutSeconds + 1
		})},
		{"v1", newFunc("f", "RETURN", "RETURN", func(f *api.Func) { f.APIVersion = api.FuncAPIVersionV1 })},
		{"no warm pod", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := warmEnv(t)
			f := tc.f
			if f == nil {
				f = newFunc("f", "RETURN", "RETURN")
			} else {
				fp := newFakeWarmPod(t, e, "warm-a", http.StatusOK, `{}`)
				defer func() {
					if n := fp.specialised.Load(); n != 0 {
						t.Errorf("specialised a warm pod %d times", n)
					}
				}()
			}
			e.putFunc(f)
			if err := e.s.warm.claim(context.Background(), f, "default/"+function.ObjectName(f.Name)); !errors.Is(err, errNoWarmPod) {
				t.Fatalf("claim: %v, want errNoWarmPod", err)
			}
		})
	}
}
