package replicaset

import (
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/pkg/api"
)

func at(sec int64) *time.Time {
	t := time.Unix(sec, 0)
	return &t
}

func rsPod(name, node, phase string, ready bool, created int64, restarts int32) *api.Pod {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, CreationTimestamp: at(created)},
		Spec: api.PodSpec{NodeName: node}, Status: api.PodStatus{Phase: phase}}
	st := api.ConditionFalse
	if ready {
		st = api.ConditionTrue
	}
	p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: st}}
	p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "c", RestartCount: restarts}}
	return p
}

func TestPodsToDelete(t *testing.T) {
	tests := []struct {
		name string
		pods []*api.Pod
		want string
	}{
		{"unscheduled first", []*api.Pod{
			rsPod("bound", "n1", api.PodRunning, true, 1, 0), rsPod("unbound", "", api.PodPending, false, 0, 0)}, "unbound,bound"},
		{"pending before running", []*api.Pod{
			rsPod("running", "n1", api.PodRunning, false, 1, 0), rsPod("pending", "n1", api.PodPending, false, 0, 0)}, "pending,running"},
		{"not ready before ready", []*api.Pod{
			rsPod("ready", "n1", api.PodRunning, true, 1, 0), rsPod("notready", "n1", api.PodRunning, false, 0, 0)}, "notready,ready"},
		{"more restarts first", []*api.Pod{
			rsPod("calm", "n1", api.PodRunning, true, 1, 0), rsPod("crashy", "n1", api.PodRunning, true, 0, 5)}, "crashy,calm"},
		{"newest first", []*api.Pod{
			rsPod("old", "n1", api.PodRunning, true, 1, 0), rsPod("new", "n1", api.PodRunning, true, 9, 0), rsPod("mid", "n1", api.PodRunning, true, 5, 0)}, "new,mid,old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			for _, p := range podsToDelete(tt.pods, len(tt.pods)) {
				names = append(names, p.Name)
			}
			if got := strings.Join(names, ","); got != tt.want {
				t.Fatalf("order %s, want %s", got, tt.want)
			}
		})
	}
	if got := podsToDelete(tests[4].pods, 1); len(got) != 1 || got[0].Name != "new" {
		t.Fatalf("podsToDelete(1) = %v", got)
	}
}

func TestSlowStartBatch(t *testing.T) {
	var calls atomic.Int64
	n, err := slowStartBatch(10, func() error { calls.Add(1); return nil })
	if n != 10 || err != nil || calls.Load() != 10 {
		t.Fatalf("all succeed: %d, %v, %d calls", n, err, calls.Load())
	}
	calls.Store(0)
	n, err = slowStartBatch(100, func() error {
		if calls.Add(1) > 3 {
			return errors.New("quota")
		}
		return nil
	})
	// Batches of 1 and 2 succeed; the batch of 4 has a failure: stop there.
	if err == nil || calls.Load() != 7 || n != 3 {
		t.Fatalf("failing: %d succeeded, %d calls, err %v", n, calls.Load(), err)
	}
}

func TestNewPodAndStatus(t *testing.T) {
	three := int32(3)
	rs := &api.ReplicaSet{
		ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "prod", UID: "rs-uid", Generation: 4},
		Spec: api.ReplicaSetSpec{Replicas: &three, Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "fe"}},
				Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}}}}},
	}
	p := newPod(rs)
	if !regexp.MustCompile(`^web-[a-z0-9]{5}$`).MatchString(p.Name) || p.Namespace != "prod" {
		t.Fatalf("pod %s/%s", p.Namespace, p.Name)
	}
	ref := p.OwnerReferences
	if len(ref) != 1 || ref[0].UID != "rs-uid" || ref[0].Kind != "ReplicaSet" || ref[0].APIVersion != "apps/v1" ||
		ref[0].Controller == nil || !*ref[0].Controller {
		t.Fatalf("owner references %+v", ref)
	}
	p.Labels["x"] = "y"
	if _, ok := rs.Spec.Template.Labels["x"]; ok {
		t.Fatal("the pod shares its labels with the template")
	}

	partial := rsPod("a", "n1", api.PodRunning, true, 1, 0)
	partial.Labels = map[string]string{"app": "web"}
	full := rsPod("b", "n1", api.PodRunning, false, 1, 0)
	full.Labels = map[string]string{"app": "web", "tier": "fe"}
	st, _ := computeStatus(rs, []*api.Pod{partial, full}, time.Now())
	want := api.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 4}
	if st != want {
		t.Fatalf("status %+v, want %+v", st, want)
	}
}
