package function

import (
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
)

func TestPodStartFailure(t *testing.T) {
	ready := []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}
	status := func(cs api.ContainerStatus) api.PodStatus {
		cs.Name = "funcserver"
		return api.PodStatus{Phase: api.PodRunning, ContainerStatuses: []api.ContainerStatus{cs}}
	}
	waiting := func(reason, msg string) api.ContainerState {
		return api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	exited := func(code int32, msg string) api.ContainerState {
		return api.ContainerState{Terminated: &api.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: msg}}
	}
	at := time.Date(2026, 11, 28, 10, 0, 0, 500e6, time.UTC)
	ended := func(reason string, code int32, msg string) api.ContainerState {
		finished := at
		return api.ContainerState{Terminated: &api.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg, FinishedAt: &finished}}
	}
	notReady := func(since time.Time) []api.PodCondition {
		return []api.PodCondition{{Type: api.PodReady, Status: api.ConditionFalse, LastTransitionTime: &since}}
	}
	running := api.ContainerState{Running: &api.ContainerStateRunning{}}
	withConds := func(st api.PodStatus, c []api.PodCondition) api.PodStatus { st.Conditions = c; return st }
	syntax := "import function.py: SyntaxError: expected ':' (function.py, line 1)\n"
	for _, tc := range []struct {
		name   string
		status api.PodStatus
		reason string // "" for no failure
		msg    string
	}{
		{"pending", api.PodStatus{Phase: api.PodPending}, "", ""},
		{"creating", status(api.ContainerStatus{State: waiting("ContainerCreating", "")}), "", ""},
		{"running, not ready yet", status(api.ContainerStatus{State: api.ContainerState{Running: &api.ContainerStateRunning{}}}), "", ""},
		{"ready", api.PodStatus{Phase: api.PodRunning, Conditions: ready,
			ContainerStatuses: []api.ContainerStatus{{Name: "c", Ready: true, LastState: exited(1, "old")}}}, "", ""},
		{"first exit with a message, restarting at once", status(api.ContainerStatus{State: waiting("ContainerCreating", ""), LastState: exited(1, syntax)}),
			"StartFailed", "SyntaxError: expected ':' (function.py, line 1)"},
		{"back-off after a message", status(api.ContainerStatus{State: waiting("CrashLoopBackOff", "back-off 10s"), LastState: exited(1, "preRun.sh failed with exit code 3")}),
			"CrashLoopBackOff", "preRun.sh failed with exit code 3"},
		{"back-off without a message", status(api.ContainerStatus{State: waiting("CrashLoopBackOff", "back-off 10s"), LastState: exited(2, "")}),
			"CrashLoopBackOff", "container funcserver exited with code 2"},
		{"killed without a message, restarting", status(api.ContainerStatus{State: waiting("ContainerCreating", ""), LastState: exited(137, "")}), "", ""},
		{"running again, not ready, after a failure", status(api.ContainerStatus{State: api.ContainerState{Running: &api.ContainerStateRunning{}}, LastState: exited(1, syntax)}),
			"StartFailed", "SyntaxError"},
		{"running again after a failure, ready", status(api.ContainerStatus{Ready: true, State: api.ContainerState{Running: &api.ContainerStateRunning{}}, LastState: exited(1, syntax)}), "", ""},
		{"OOM killed, restarting", status(api.ContainerStatus{State: running, LastState: ended("OOMKilled", 137, "the container used more memory than its limit and was killed")}), "", ""},
		{"OOM killed, backing off", status(api.ContainerStatus{State: waiting("CrashLoopBackOff", ""), LastState: ended("OOMKilled", 137, "the container used more memory than its limit and was killed")}),
			"CrashLoopBackOff", "exited with code 137 (OOMKilled)"},
		{"vanished from containerd", status(api.ContainerStatus{State: running, LastState: ended("Error", 137, "the container disappeared from containerd")}), "", ""},
		{"could not be started", status(api.ContainerStatus{State: running, LastState: ended("StartError", 128, "exec: no such file")}), "StartFailed", "no such file"},
		{"failed, never ready since", withConds(status(api.ContainerStatus{State: running, LastState: ended("Error", 1, syntax)}), notReady(at.Add(-5*time.Second))),
			"StartFailed", "SyntaxError"},
		{"failed within the second of the first status", withConds(status(api.ContainerStatus{State: running, LastState: ended("Error", 1, syntax)}), notReady(at.Truncate(time.Second))),
			"StartFailed", "SyntaxError"},
		{"failed, served since, unready now", withConds(status(api.ContainerStatus{State: running, LastState: ended("Error", 1, syntax)}), notReady(at.Add(5*time.Second))), "", ""},
		{"killed by liveness after serving, backing off", withConds(status(api.ContainerStatus{State: waiting("CrashLoopBackOff", ""), LastState: ended("Error", 137, "")}), notReady(at.Add(5*time.Second))), "", ""},
		{"its code not delivered yet", status(api.ContainerStatus{State: waiting("CreateContainerConfigError",
			`spec.volumes[0].configMap: configMap "func-once": ConfigMap "func-once" not found in namespace "default": not found`)}), "", ""},
		{"another config map missing", status(api.ContainerStatus{State: waiting("CreateContainerConfigError",
			`spec.volumes[1].configMap: configMap "settings": ConfigMap "settings" not found in namespace "default": not found`)}),
			"CreateContainerConfigError", `configMap "settings"`},
		{"image not pulled", status(api.ContainerStatus{State: waiting("ErrImagePull", `pull "nope:1": not found`)}), "ErrImagePull", `pull "nope:1": not found`},
		{"image pull back-off", status(api.ContainerStatus{State: waiting("ImagePullBackOff", "not found")}), "ImagePullBackOff", "not found"},
		{"pod failed", api.PodStatus{Phase: api.PodFailed, Message: "evicted"}, "PodEnded", "the pod ended (Failed) before serving: evicted"},
		{"init container failing", api.PodStatus{Phase: api.PodPending,
			InitContainerStatuses: []api.ContainerStatus{{Name: "init", State: waiting("CrashLoopBackOff", ""), LastState: exited(1, "")}}},
			"CrashLoopBackOff", "container init exited with code 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := PodStartFailure(&api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Labels: map[string]string{LabelFunc: "once"}}, Status: tc.status})
			switch {
			case tc.reason == "" && f != nil:
				t.Fatalf("failure %v, want none", f)
			case tc.reason == "":
			case f == nil:
				t.Fatalf("no failure, want %s", tc.reason)
			case f.Reason != tc.reason || !strings.Contains(f.Message, tc.msg):
				t.Fatalf("failure %q / %q, want %q with %q", f.Reason, f.Message, tc.reason, tc.msg)
			}
		})
	}
}
