package pod

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
)

// fakeRuntime runs nothing; it records what it was asked.
type fakeRuntime struct {
	mu      sync.Mutex
	created []string
	specs   []containerd.ContainerSpec
	status  map[string]containerd.Status
	reaped  []string
}

func (f *fakeRuntime) HasImage(context.Context, string) (bool, error) { return true, nil }
func (f *fakeRuntime) PullImage(context.Context, string) error        { return nil }
func (f *fakeRuntime) CreateContainer(_ context.Context, s containerd.ContainerSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, s.ID)
	f.specs = append(f.specs, s)
	f.status[s.ID] = containerd.Status{ID: s.ID, State: containerd.StateCreated, Labels: s.Labels}
	return nil
}
func (f *fakeRuntime) StartContainer(_ context.Context, id, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.status[id]
	st.State = containerd.StateRunning
	f.status[id] = st
	return nil
}
func (f *fakeRuntime) ContainerStatus(_ context.Context, id string) (containerd.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.status[id]
	if !ok {
		return st, errdefs.ErrNotFound
	}
	return st, nil
}
func (f *fakeRuntime) StopContainer(context.Context, string, time.Duration) error { return nil }
func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.status, id)
	return nil
}
func (f *fakeRuntime) ReapContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status[id].State != containerd.StateExited {
		return fmt.Errorf("reaping %s: %w: %s", id, errdefs.ErrConflict, f.status[id].State)
	}
	f.reaped = append(f.reaped, id)
	return nil
}

func (f *fakeRuntime) exit(id string, code int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.status[id]
	st.State, st.ExitCode, st.ExitedAt = containerd.StateExited, code, time.Now()
	f.status[id] = st
}

// fakeAPI holds objects by namespace/name; without a ca it plays an
// apiserver that has no secure port (no tokens).
type fakeAPI struct {
	last       *api.Pod
	configMaps map[string]*api.ConfigMap
	secrets    map[string]*api.Secret
	services   map[string]*api.Service
	ca         []byte
	tokenTTL   time.Duration
	tokenErr   error
	tokens     int // tokens given
}

func get[T any](m map[string]*T, ns, name string) (*T, error) {
	if v, ok := m[ns+"/"+name]; ok {
		return v, nil
	}
	return nil, errdefs.ErrNotFound
}

func (f *fakeAPI) GetConfigMap(_ context.Context, ns, name string) (*api.ConfigMap, error) {
	return get(f.configMaps, ns, name)
}
func (f *fakeAPI) GetSecret(_ context.Context, ns, name string) (*api.Secret, error) {
	return get(f.secrets, ns, name)
}
func (f *fakeAPI) GetService(_ context.Context, ns, name string) (*api.Service, error) {
	return get(f.services, ns, name)
}
func (f *fakeAPI) GetServiceAccount(context.Context, string, string) (*api.ServiceAccount, error) {
	return nil, errdefs.ErrNotFound
}
func (f *fakeAPI) ClusterCA(context.Context) ([]byte, error) {
	if f.ca == nil {
		return nil, errdefs.ErrNotFound
	}
	return f.ca, nil
}
func (f *fakeAPI) CreateToken(_ context.Context, _, sa string, req *api.TokenRequest) (*api.TokenRequest, error) {
	if f.tokenErr != nil {
		return nil, f.tokenErr
	}
	f.tokens++
	out := *req
	out.Status.Token = fmt.Sprintf("%s-token-%d", sa, f.tokens)
	out.Status.ExpirationTimestamp = time.Now().Add(f.tokenTTL)
	return &out, nil
}
func (f *fakeAPI) UpdatePodStatus(_ context.Context, p *api.Pod) error { f.last = p; return nil }
func (f *fakeAPI) DeletePod(context.Context, string, string, string) error {
	return nil
}

func newTestWorker(t *testing.T, p *api.Pod) (*Worker, *fakeRuntime, *fakeAPI) {
	rt := &fakeRuntime{status: map[string]containerd.Status{}}
	fa := &fakeAPI{}
	cfg := &Config{NodeName: "n", NodeIP: "127.0.0.1", RootDir: t.TempDir(), BackoffBase: time.Hour, BackoffMax: 2 * time.Hour}
	return NewWorker(cfg, rt, fa, NewPorts("127.0.0.1", 0, 0), p, nil), rt, fa
}

func testPod(limits api.ResourceList) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-1"},
		Spec: api.PodSpec{NodeName: "n", RestartPolicy: api.RestartPolicyAlways, Containers: []api.Container{{
			Name: "c", Image: "minik8s/python-runtime:latest", Resources: api.ResourceRequirements{Limits: limits}}}}}
}

func TestWorkerRefusesUnparseableLimit(t *testing.T) {
	tests := []struct {
		limits api.ResourceList
		field  string
	}{
		{api.ResourceList{api.ResourceMemory: "lots"}, "spec.containers[0].resources.limits.memory"},
		{api.ResourceList{api.ResourceCPU: "fast"}, "spec.containers[0].resources.limits.cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			w, rt, fa := newTestWorker(t, testPod(tt.limits))
			w.sync(context.Background())
			if len(rt.created) != 0 {
				t.Errorf("containers created: %v", rt.created)
			}
			st := fa.last.Status
			if st.Phase != api.PodFailed || st.Reason != "InvalidResourceLimit" || !strings.Contains(st.Message, tt.field) {
				t.Errorf("status = %s %s %q", st.Phase, st.Reason, st.Message)
			}
		})
	}
}

func TestWorkerBackoff(t *testing.T) {
	w, rt, fa := newTestWorker(t, testPod(nil))
	ctx := context.Background()
	w.sync(ctx)
	if len(rt.created) != 1 || fa.last.Status.Phase != api.PodRunning {
		t.Fatalf("first sync: created %v, phase %s", rt.created, fa.last.Status.Phase)
	}
	if env := fa.last.Status.ContainerStatuses[0].Ports; len(env) != 1 || env[0].ContainerPort == 0 {
		t.Errorf("no port allocated: %+v", env)
	}
	// The first crash restarts at once.
	rt.exit(rt.created[0], 1)
	w.sync(ctx)
	cs := fa.last.Status.ContainerStatuses[0]
	if len(rt.created) != 2 || cs.RestartCount != 1 || cs.State.Running == nil || cs.LastState.Terminated.ExitCode != 1 {
		t.Fatalf("after the first crash: created %v, status %+v", rt.created, cs)
	}
	if len(rt.reaped) != 1 || rt.reaped[0] != rt.created[0] {
		t.Errorf("reaped %v after the first crash, want %v", rt.reaped, rt.created[:1])
	}
	if id, _ := w.RunningContainer("c"); id != rt.created[1] {
		t.Errorf("running container %q after the restart, want %q", id, rt.created[1])
	}
	// The second waits (an hour here): CrashLoopBackOff.
	rt.exit(rt.created[1], 2)
	w.sync(ctx)
	cs = fa.last.Status.ContainerStatuses[0]
	if len(rt.created) != 2 || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
		t.Fatalf("after the second crash: created %v, status %+v", rt.created, cs.State)
	}
	if fa.last.Status.Phase != api.PodRunning {
		t.Errorf("phase %s while backing off", fa.last.Status.Phase)
	}
	// Not running while it backs off: exec refuses, logs -f ends.
	if id, ok := w.RunningContainer("c"); ok {
		t.Errorf("running container %q while backing off", id)
	}
}

func TestBackoffDoubles(t *testing.T) {
	w := &Worker{cfg: &Config{BackoffBase: 10 * time.Second, BackoffMax: 60 * time.Second}}
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 60 * time.Second, 60 * time.Second}
	for n, d := range want {
		if got := w.backoff(int32(n)); got != d {
			t.Errorf("backoff(%d) = %s, want %s", n, got, d)
		}
	}
}

func TestIDPart(t *testing.T) {
	tests := map[string]string{"web-1": "web-1", "A.B_c": "a-b-c", "--x--": "x", "": "c", "...": "c"}
	for in, want := range tests {
		if got := idPart(in, 20); got != want {
			t.Errorf("idPart(%q) = %q, want %q", in, got, want)
		}
	}
}

func (f *fakeRuntime) Exec(context.Context, string, []string) (int, string, error) {
	return 0, "", nil
}
