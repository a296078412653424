package funcrunner

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/client/cache/cachetest"
	"minik8s/pkg/function"
)

// fakeAPI answers the few apiserver requests the stepper makes: gets of
// stored objects, pod creates and deletes.
type fakeAPI struct {
	mu       sync.Mutex
	objs     map[string][]byte // path → JSON
	requests []string
	// onCreate, when set, sees each pod created.
	onCreate func(p *api.Pod)
}

func (a *fakeAPI) put(obj api.Object, res api.Resource) {
	m := obj.GetObjectMeta()
	data, _ := json.Marshal(obj)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.objs[res.Path(m.Namespace, m.Name)] = data
}

func (a *fakeAPI) delete(obj api.Object, res api.Resource) {
	m := obj.GetObjectMeta()
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.objs, res.Path(m.Namespace, m.Name))
}

func (a *fakeAPI) log() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.requests...)
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests = append(a.requests, r.Method+" "+r.URL.Path)
	data, ok := a.objs[r.URL.Path]
	var created *api.Pod
	switch {
	case r.Method == http.MethodGet && ok:
	case r.Method == http.MethodDelete && ok:
		delete(a.objs, r.URL.Path)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pods"):
		var p api.Pod
		_ = json.NewDecoder(r.Body).Decode(&p)
		ns := strings.Split(r.URL.Path, "/")[4]
		p.Namespace, p.UID, p.ResourceVersion = ns, "uid-"+p.Name, "1"
		path := r.URL.Path + "/" + p.Name
		if _, exists := a.objs[path]; exists {
			a.mu.Unlock()
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(api.Status{Error: "exists", Reason: "AlreadyExists", Code: 409})
			return
		}
		data, _ = json.Marshal(&p)
		a.objs[path] = data
		ok, created = true, &p
	}
	hook := a.onCreate
	a.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(api.Status{Error: r.URL.Path + " not found", Reason: "NotFound", Code: 404})
		return
	}
	if created != nil && hook != nil {
		hook(created)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// testEnv is a stepper over informers the test fills and a fake apiserver.
type testEnv struct {
	t      *testing.T
	ctx    context.Context
	api    *fakeAPI
	funcs  *cachetest.LW[*api.Func]
	pods   *cachetest.LW[*api.Pod]
	eps    *cachetest.LW[*api.Endpoints]
	podInf *cache.Informer[api.Pod, *api.Pod]
	s      *stepper
	d      *demand

	mu sync.Mutex
	rv int
}

func newEnv(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &testEnv{t: t, ctx: ctx, api: &fakeAPI{objs: map[string][]byte{}},
		funcs: cachetest.NewLW[*api.Func](), pods: cachetest.NewLW[*api.Pod](), eps: cachetest.NewLW[*api.Endpoints]()}
	srv := httptest.NewServer(e.api)
	t.Cleanup(srv.Close)
	funcs := cache.NewInformer[api.Func](e.funcs)
	e.podInf = cache.NewInformer[api.Pod](e.pods)
	eps := cache.NewInformer[api.Endpoints](e.eps)
	e.d = newDemand()
	e.s = newStepper(cfg, client.New(srv.URL), funcs, e.podInf, eps, e.d)
	funcs.Start(ctx)
	e.podInf.Start(ctx)
	eps.Start(ctx)
	if !cache.WaitForSync(ctx, funcs, e.podInf, eps) {
		t.Fatal("informers not synced")
	}
	return e
}

func (e *testEnv) nextRV() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rv++
	return strconv.Itoa(e.rv + 100)
}

// send hands an object to an informer (as added or modified) and waits
// until its cache holds it.
func send[T any, PT client.Object[T]](e *testEnv, lw *cachetest.LW[PT], typ api.EventType, obj PT, cached func() (PT, bool)) {
	e.t.Helper()
	if typ != api.Deleted {
		obj.GetObjectMeta().ResourceVersion = e.nextRV()
	}
	select {
	case lw.Events <- client.Event[PT]{Type: typ, Object: obj}:
	case <-time.After(20 * time.Second):
		e.t.Fatal("informer does not take events")
	}
	waitFor(e.t, "the cache to take the change", func() bool {
		got, ok := cached()
		if typ == api.Deleted {
			return !ok
		}
		return ok && got.GetObjectMeta().ResourceVersion == obj.GetObjectMeta().ResourceVersion
	})
}

// putFunc stores f in the cache and the apiserver.
func (e *testEnv) putFunc(f *api.Func) {
	e.t.Helper()
	if f.Namespace == "" {
		f.Namespace = "default"
	}
	send(e, e.funcs, api.Modified, f, func() (*api.Func, bool) { return e.s.funcs.Get(f.Namespace, f.Name) })
	e.api.put(f, api.FuncsResource)
}

// putPod stores p in the cache and the apiserver.
func (e *testEnv) putPod(p *api.Pod) {
	e.t.Helper()
	send(e, e.pods, api.Modified, p, func() (*api.Pod, bool) { return e.s.pods.Get(p.Namespace, p.Name) })
	e.api.put(p, api.PodsResource)
}

func (e *testEnv) putEndpoints(ep *api.Endpoints) {
	e.t.Helper()
	send(e, e.eps, api.Modified, ep, func() (*api.Endpoints, bool) { return e.s.pool.eps.Get(ep.Namespace, ep.Name) })
}

// fakePod is a runtime: it answers calls with answer(arg).
type fakePod struct {
	name string
	port int32
	srv  *httptest.Server
	// rs, when set, is the ReplicaSet owning the pod instead of the function's.
	rs string
}

func newFakePod(t *testing.T, name string, h http.HandlerFunc) *fakePod {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	return &fakePod{name: name, port: int32(port), srv: srv}
}

// answer is a runtime handler answering result(arg).
func answer(result func(arg string) function.Result) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arg, _ := io.ReadAll(r.Body)
		_ = json.NewEncoder(w).Encode(result(string(arg)))
	}
}

// publish makes pods the ready endpoints of f, owned by f's ReplicaSet
// unless their rs says otherwise.
func (e *testEnv) publish(f *api.Func, pods ...*fakePod) {
	e.t.Helper()
	yes := true
	sub := api.EndpointSubset{Ports: []api.EndpointPort{{Name: function.PortName, Port: function.ServicePort}}}
	for _, fp := range pods {
		rs := f.Status.ReplicaSetUID
		if fp.rs != "" {
			rs = fp.rs
		}
		p := &api.Pod{
			ObjectMeta: api.ObjectMeta{Namespace: "default", Name: fp.name, UID: "uid-" + fp.name,
				Labels:          map[string]string{function.LabelFunc: f.Name},
				OwnerReferences: []api.OwnerReference{{Kind: "ReplicaSet", Name: function.ObjectName(f.Name), UID: rs, Controller: &yes}}},
			Spec:   api.PodSpec{Containers: []api.Container{{Name: "runtime", Ports: []api.ContainerPort{{Name: function.PortName, ContainerPort: fp.port}}}}},
			Status: api.PodStatus{Phase: api.PodRunning, PodIP: "127.0.0.1"},
		}
		e.putPod(p)
		sub.Addresses = append(sub.Addresses, api.EndpointAddress{IP: "127.0.0.1", Port: fp.port, NodeName: "node-a",
			TargetRef: &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: fp.name, UID: p.UID}})
	}
	e.putEndpoints(&api.Endpoints{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: function.ObjectName(f.Name)},
		Subsets: []api.EndpointSubset{sub}})
}

func newFunc(name, left, right string, mutate ...func(*api.Func)) *api.Func {
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: api.FuncAPIVersionV2, Kind: "Func"},
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: "uid-func-" + name},
		Spec:       api.FuncSpec{Name: name, Left: left, Right: right},
		Status:     api.FuncStatus{ReplicaSetUID: "rs-" + name}}
	for _, m := range mutate {
		m(f)
	}
	return f
}

func newInstance(fn, arg string) *api.FuncInstance {
	return &api.FuncInstance{
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "0123456789abcdef", UID: "uid-inst", ResourceVersion: "7",
			Labels: map[string]string{function.LabelFunc: fn}},
		Spec:   api.FuncInstanceSpec{Function: fn, Arg: api.Bytes(arg)},
		Status: api.FuncInstanceStatus{Phase: api.InstanceRunning, Runner: "r1", Next: &api.FuncStep{Function: fn, Arg: api.Bytes(arg)}},
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
