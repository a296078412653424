package funcrunner

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
)

// A v1 step runs in a pod made for it, found ready by the pods cache, and
// removed when the step ends, however it ends.
func TestFreshPod(t *testing.T) {
	rt := newFakePod(t, "runtime", answer(func(arg string) function.Result { return function.Result{Result: api.Bytes("v1 " + arg)} }))
	ready := func(p *api.Pod) {
		p.Spec.NodeName = "node-b"
		p.Status.Phase = api.PodRunning
		p.Status.PodIP = "127.0.0.1"
		p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}
		p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "runtime", Ports: []api.ContainerPort{{Name: function.PortName, ContainerPort: rt.port}}}}
	}
	failed := func(p *api.Pod) {
		p.Status.Phase = api.PodFailed
		p.Status.Message = "out of memory"
	}
	for _, tc := range []struct {
		name      string
		instUID   string
		cold      time.Duration
		events    []func(*api.Pod) api.EventType // applied in turn to the created pod
		phase     string
		errHas    string
		ownerKind string
	}{
		{name: "runs in its pod", instUID: "uid-inst", events: []func(*api.Pod) api.EventType{
			func(*api.Pod) api.EventType { return api.Added },
			func(p *api.Pod) api.EventType { ready(p); return api.Modified },
		}, phase: api.InstanceSucceeded, ownerKind: "FuncInstance"},
		{name: "instance not stored yet", instUID: "", events: []func(*api.Pod) api.EventType{
			func(p *api.Pod) api.EventType { ready(p); return api.Added },
		}, phase: api.InstanceSucceeded, ownerKind: "Func"},
		{name: "pod fails", instUID: "uid-inst", events: []func(*api.Pod) api.EventType{
			func(*api.Pod) api.EventType { return api.Added },
			func(p *api.Pod) api.EventType { failed(p); return api.Modified },
		}, phase: api.InstanceFailed, errHas: "ended (Failed) before serving: out of memory", ownerKind: "FuncInstance"},
		{name: "pod deleted", instUID: "uid-inst", events: []func(*api.Pod) api.EventType{
			func(*api.Pod) api.EventType { return api.Added },
			func(*api.Pod) api.EventType { return api.Deleted },
		}, phase: api.InstanceFailed, errHas: "was deleted before it became ready", ownerKind: "FuncInstance"},
		{name: "pod never ready", instUID: "uid-inst", cold: 300 * time.Millisecond, events: []func(*api.Pod) api.EventType{
			func(*api.Pod) api.EventType { return api.Added },
		}, phase: api.InstanceFailed, errHas: "cold start timed out after 300ms: pod func-once-01234567-0 did not become ready", ownerKind: "FuncInstance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cold := tc.cold
			if cold == 0 {
				cold = time.Minute
			}
			e := newEnv(t, Config{ColdStartTimeout: cold})
			f := newFunc("once", "", "", func(f *api.Func) { f.APIVersion = api.FuncAPIVersionV1; f.Status = api.FuncStatus{} })
			e.putFunc(f)
			var mu sync.Mutex
			var created *api.Pod
			e.api.onCreate = func(p *api.Pod) {
				mu.Lock()
				created = p
				mu.Unlock()
				// The kubelet's story of the pod, told by the pods cache.
				go func() {
					for i, ev := range tc.events {
						cp := *p
						typ := ev(&cp)
						cp.ResourceVersion = string(rune('a' + i))
						if typ == api.Deleted {
							e.api.mu.Lock()
							delete(e.api.objs, api.PodsResource.Path(p.Namespace, p.Name))
							e.api.mu.Unlock()
						}
						select {
						case e.pods.Events <- client.Event[*api.Pod]{Type: typ, Object: &cp}:
						case <-e.ctx.Done():
							return
						}
					}
				}()
			}
			inst := newInstance("once", "x")
			inst.UID = tc.instUID
			out, err := e.s.advance(e.ctx, inst)
			if err != nil {
				t.Fatal(err)
			}
			st := out.Status
			if st.Phase != tc.phase || !strings.Contains(st.Error, tc.errHas) {
				t.Fatalf("%s %q, want %s %q", st.Phase, st.Error, tc.phase, tc.errHas)
			}
			name := "func-once-01234567-0"
			if tc.phase == api.InstanceSucceeded && (st.Result != "v1 x" || st.Steps[0].Pod != name || st.Steps[0].Node != "node-b") {
				t.Errorf("outcome %+v", st)
			}
			mu.Lock()
			p := created
			mu.Unlock()
			if p == nil || p.Name != name {
				t.Fatalf("created pod %+v, want %s", p, name)
			}
			if p.Labels[function.LabelFunc] != "once" || p.Labels[function.LabelInstance] != inst.Name || p.Labels[function.LabelCode] == "" {
				t.Errorf("pod labels %v", p.Labels)
			}
			if refs := p.OwnerReferences; len(refs) != 1 || refs[0].Kind != tc.ownerKind || refs[0].Controller == nil {
				data, _ := json.Marshal(refs)
				t.Errorf("pod owners %s, want a %s", data, tc.ownerKind)
			}
			del := "DELETE " + api.PodsResource.Path("default", name)
			found := false
			for _, r := range e.api.log() {
				found = found || r == del
			}
			if !found {
				t.Errorf("the step's pod was not deleted: %v", e.api.log())
			}
		})
	}
}
