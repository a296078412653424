package functions

import (
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

func TestReadyCondition(t *testing.T) {
	now := time.Unix(5000, 0)
	before := time.Unix(1000, 0).UTC()
	f := func(conds ...api.FuncCondition) *api.Func {
		return &api.Func{ObjectMeta: api.ObjectMeta{Name: "fn", Namespace: "default", Generation: 3},
			Spec: api.FuncSpec{Function: "ZGVmIHJ1bihhKTogcmV0dXJuIGE="}, Status: api.FuncStatus{Conditions: conds}}
	}
	hash := function.CodeHash(&f().Spec)
	pod := func(code string, status api.PodStatus) *api.Pod {
		return &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Labels: map[string]string{function.LabelFunc: "fn", function.LabelCode: code}}, Status: status}
	}
	readyPod := pod(hash, api.PodStatus{Phase: api.PodRunning, Conditions: []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}})
	crashing := func(code string) *api.Pod {
		return pod(code, api.PodStatus{Phase: api.PodRunning, ContainerStatuses: []api.ContainerStatus{{Name: "funcserver",
			State:     api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastState: api.ContainerState{Terminated: &api.ContainerStateTerminated{ExitCode: 1, Message: "import function.py: SyntaxError: invalid syntax"}}}}})
	}
	starting := pod(hash, api.PodStatus{Phase: api.PodPending})
	placed := pod(hash, api.PodStatus{Phase: api.PodPending})
	placed.Spec.NodeName = "n1"
	lost := pod(hash, api.PodStatus{Phase: api.PodFailed, Reason: "NodeLost", Message: "node n1 is lost"})
	// A pod of one call (v1), ready, its call ended and its deletion begun.
	callPod := pod(hash, readyPod.Status)
	callPod.Labels[function.LabelInstance] = "i-1"
	gone := time.Unix(4999, 0)
	callPod.DeletionTimestamp = &gone
	v1 := func() *api.Func {
		fn := f()
		fn.APIVersion = api.FuncAPIVersionV1
		return fn
	}
	cond := func(status, reason string, gen int64) api.FuncCondition {
		return api.FuncCondition{Type: api.FuncReady, Status: status, Reason: reason, ObservedGeneration: gen, LastTransitionTime: &before}
	}
	for _, tc := range []struct {
		name       string
		f          *api.Func
		pods       []*api.Pod
		status     string // "" for no change
		reason     string
		transition bool
	}{
		{"new function, nothing yet", f(), nil, "", "", false},
		{"new function, pod starting", f(), []*api.Pod{starting}, "", "", false},
		{"a pod ready", f(), []*api.Pod{starting, readyPod}, api.ConditionTrue, "PodReady", true},
		{"ready stays ready", f(cond(api.ConditionTrue, "PodReady", 3)), []*api.Pod{readyPod}, api.ConditionTrue, "PodReady", false},
		{"scaled to zero stays ready", f(cond(api.ConditionTrue, "PodReady", 3)), nil, "", "", false},
		{"the pod crashes", f(), []*api.Pod{crashing(hash)}, api.ConditionFalse, "CrashLoopBackOff", true},
		{"one crashes, one placed still starting", f(), []*api.Pod{crashing(hash), placed}, "", "", false},
		{"one crashes, one not yet placed", f(), []*api.Pod{crashing(hash), starting}, api.ConditionFalse, "CrashLoopBackOff", true},
		{"its node lost: not the code's failure", f(), []*api.Pod{lost}, "", "", false},
		{"one crashes, one serves", f(), []*api.Pod{crashing(hash), readyPod}, api.ConditionTrue, "PodReady", true},
		{"old code crashes: not this code's failure", f(), []*api.Pod{crashing("old")}, "", "", false},
		{"failed, pods gone: the next call tries", f(cond(api.ConditionFalse, "CrashLoopBackOff", 3)), nil, api.ConditionUnknown, "Starting", true},
		{"failed, a fresh pod starting", f(cond(api.ConditionFalse, "CrashLoopBackOff", 2)), []*api.Pod{starting}, api.ConditionUnknown, "Starting", true},
		{"failing on", f(cond(api.ConditionFalse, "CrashLoopBackOff", 3)), []*api.Pod{crashing(hash)}, api.ConditionFalse, "CrashLoopBackOff", false},
		{"v1: a call's pod was ready", v1(), []*api.Pod{callPod}, api.ConditionTrue, "PodReady", true},
		{"v1: a pool's pod does not count", v1(), []*api.Pod{readyPod}, "", "", false},
		{"v2: a call's pod does not count", f(), []*api.Pod{callPod}, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readyCondition(tc.f, tc.pods, now)
			if tc.status == "" {
				if got != nil {
					t.Fatalf("condition %+v, want it unchanged", *got)
				}
				return
			}
			if got == nil || got.Status != tc.status || got.Reason != tc.reason || got.ObservedGeneration != 3 {
				t.Fatalf("condition %+v, want %s %s for generation 3", got, tc.status, tc.reason)
			}
			if moved := !got.LastTransitionTime.Equal(before); moved != tc.transition {
				t.Fatalf("lastTransitionTime %v: transition %v, want %v", got.LastTransitionTime, moved, tc.transition)
			}
		})
	}
}
