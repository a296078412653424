package pod

import (
	"context"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
	"minik8s/pkg/printers"
)

func initPod(policy string) *api.Pod {
	p := testPod(nil)
	p.Spec.RestartPolicy = policy
	p.Spec.InitContainers = []api.Container{{Name: "first", Image: "i"}, {Name: "second", Image: "i"}}
	return p
}

// names are the containers created so far, by their name label.
func (f *fakeRuntime) names() []string {
	var out []string
	for _, s := range f.specs {
		out = append(out, s.Labels[containerd.LabelContainerName])
	}
	return out
}

// TestInitContainersRunInOrder: each init container starts only once the
// one before succeeded, the containers only after the last, and the
// status says so as kubectl shows it (Init:N/M, Initialized).
func TestInitContainersRunInOrder(t *testing.T) {
	w, rt, fa := newTestWorker(t, initPod(api.RestartPolicyAlways))
	ctx := context.Background()
	step := func(want []string, status, initialized string) {
		t.Helper()
		w.sync(ctx)
		if got := strings.Join(rt.names(), ","); got != strings.Join(want, ",") {
			t.Fatalf("created %s, want %s", got, strings.Join(want, ","))
		}
		p := &api.Pod{Spec: w.pod.Spec, Status: fa.last.Status}
		if got := printers.PodStatus(p); got != status {
			t.Errorf("after creating %v: STATUS %s, want %s", want, got, status)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == api.PodInitialized && c.Status != initialized {
				t.Errorf("after creating %v: Initialized %s, want %s", want, c.Status, initialized)
			}
		}
	}
	step([]string{"first"}, "Init:0/2", api.ConditionFalse)
	if fa.last.Status.Phase != api.PodPending || fa.last.Status.ContainerStatuses[0].State.Waiting.Reason != "PodInitializing" {
		t.Errorf("while initializing: phase %s, container %+v", fa.last.Status.Phase, fa.last.Status.ContainerStatuses[0].State)
	}
	// A failed init container is restarted (an Always pod's init
	// containers restart on failure), the next one still waits.
	rt.exit(rt.created[0], 1)
	step([]string{"first", "first"}, "Init:0/2", api.ConditionFalse)
	rt.exit(rt.created[1], 0)
	step([]string{"first", "first", "second"}, "Init:1/2", api.ConditionFalse)
	rt.exit(rt.created[2], 0)
	step([]string{"first", "first", "second", "c"}, "Running", api.ConditionTrue)
	if got := fa.last.Status.InitContainerStatuses; len(got) != 2 || got[0].RestartCount != 1 || !got[1].Ready || got[1].State.Terminated.Reason != "Completed" {
		t.Errorf("init container statuses %+v", got)
	}
	// Once succeeded, an init container is not run again in an Always pod.
	w.sync(ctx)
	if len(rt.created) != 4 {
		t.Errorf("created %v after initialization", rt.names())
	}
}

// TestInitContainerFailsNeverPod: in a Never pod a failed init container
// fails the pod, and its containers never start.
func TestInitContainerFailsNeverPod(t *testing.T) {
	w, rt, fa := newTestWorker(t, initPod(api.RestartPolicyNever))
	ctx := context.Background()
	w.sync(ctx)
	rt.exit(rt.created[0], 3)
	w.sync(ctx)
	w.sync(ctx)
	if got := rt.names(); len(got) != 1 {
		t.Errorf("created %v after the first init container failed", got)
	}
	st := fa.last.Status
	if st.Phase != api.PodFailed || !strings.Contains(st.Message, "init container first failed with exit code 3") {
		t.Errorf("status %s %q", st.Phase, st.Message)
	}
	p := &api.Pod{Spec: w.pod.Spec, Status: st}
	if got := printers.PodStatus(p); got != "Init:Error" {
		t.Errorf("STATUS %s, want Init:Error", got)
	}
}
