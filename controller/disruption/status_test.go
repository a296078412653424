package disruption

import (
	"errors"
	"testing"
	"time"

	"minik8s/pkg/api"
)

func TestStatus(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	yes := true
	rsRef := func(name string) []api.OwnerReference {
		return []api.OwnerReference{{Kind: "ReplicaSet", Name: name, UID: "uid-" + name, Controller: &yes}}
	}
	pod := func(name string, ready bool, mut ...func(*api.Pod)) *api.Pod {
		p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "ns", OwnerReferences: rsRef("web")}}
		st := api.ConditionFalse
		if ready {
			st = api.ConditionTrue
		}
		p.Status.Phase = api.PodRunning
		p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: st}}
		for _, m := range mut {
			m(p)
		}
		return p
	}
	deleting := func(p *api.Pod) { p.DeletionTimestamp = &now }
	orphan := func(p *api.Pod) { p.OwnerReferences = nil }
	scale := func(replicas int32) scaleFunc {
		return func(p *api.Pod, ref *api.OwnerReference) (string, int32, error) {
			if ref.Kind != "ReplicaSet" {
				return "", 0, errors.New("no scale")
			}
			return "ReplicaSet/" + ref.UID, replicas, nil
		}
	}
	bound := func(v string) *api.IntOrString { s := api.IntOrString(v); return &s }
	three := []*api.Pod{pod("a", true), pod("b", true), pod("c", true)}

	cases := []struct {
		name           string
		spec           api.PodDisruptionBudgetSpec
		disrupted      map[string]time.Time
		pods           []*api.Pod
		replicas       int32
		wantAllowed    int32
		wantHealthy    int32
		wantDesired    int32
		wantExpected   int32
		wantDisrupted  int
		wantErr        bool
		wantRecheck    bool
		wantCondReason string
	}{
		{name: "minAvailable count", spec: api.PodDisruptionBudgetSpec{MinAvailable: bound("2")}, pods: three, replicas: 3,
			wantAllowed: 1, wantHealthy: 3, wantDesired: 2, wantExpected: 3, wantCondReason: api.PDBSufficientPodsReason},
		{name: "minAvailable all of them", spec: api.PodDisruptionBudgetSpec{MinAvailable: bound("3")}, pods: three, replicas: 3,
			wantAllowed: 0, wantHealthy: 3, wantDesired: 3, wantExpected: 3, wantCondReason: api.PDBInsufficientPodsReason},
		{name: "not ready and deleting pods are not healthy", spec: api.PodDisruptionBudgetSpec{MinAvailable: bound("1")},
			pods: []*api.Pod{pod("a", true), pod("b", false), pod("c", true, deleting)}, replicas: 3,
			wantAllowed: 0, wantHealthy: 1, wantDesired: 1, wantExpected: 3, wantCondReason: api.PDBInsufficientPodsReason},
		{name: "minAvailable percentage of the controller's scale, rounded up", spec: api.PodDisruptionBudgetSpec{MinAvailable: bound("50%")},
			pods: three, replicas: 5, wantAllowed: 0, wantHealthy: 3, wantDesired: 3, wantExpected: 5, wantCondReason: api.PDBInsufficientPodsReason},
		{name: "maxUnavailable of the scale", spec: api.PodDisruptionBudgetSpec{MaxUnavailable: bound("1")}, pods: three, replicas: 3,
			wantAllowed: 1, wantHealthy: 3, wantDesired: 2, wantExpected: 3, wantCondReason: api.PDBSufficientPodsReason},
		{name: "maxUnavailable percentage rounds up", spec: api.PodDisruptionBudgetSpec{MaxUnavailable: bound("34%")}, pods: three, replicas: 3,
			wantAllowed: 2, wantHealthy: 3, wantDesired: 1, wantExpected: 3, wantCondReason: api.PDBSufficientPodsReason},
		{name: "maxUnavailable 0 allows none", spec: api.PodDisruptionBudgetSpec{MaxUnavailable: bound("0")}, pods: three, replicas: 3,
			wantAllowed: 0, wantHealthy: 3, wantDesired: 3, wantExpected: 3, wantCondReason: api.PDBInsufficientPodsReason},
		{name: "pods of no controller are not expected", spec: api.PodDisruptionBudgetSpec{MaxUnavailable: bound("1")},
			pods: []*api.Pod{pod("a", true, orphan), pod("b", true, orphan)}, replicas: 3,
			wantAllowed: 0, wantHealthy: 2, wantDesired: 0, wantExpected: 0, wantCondReason: api.PDBInsufficientPodsReason},
		{name: "an evicted pod still there is not healthy, and is looked at again", spec: api.PodDisruptionBudgetSpec{MinAvailable: bound("1")},
			disrupted: map[string]time.Time{"a": now.Add(-time.Minute), "gone": now.Add(-time.Minute)}, pods: three, replicas: 3,
			wantAllowed: 1, wantHealthy: 2, wantDesired: 1, wantExpected: 3, wantDisrupted: 1, wantRecheck: true, wantCondReason: api.PDBSufficientPodsReason},
		{name: "an eviction not seen through in time counts no more", spec: api.PodDisruptionBudgetSpec{MinAvailable: bound("1")},
			disrupted: map[string]time.Time{"a": now.Add(-3 * time.Minute)}, pods: three, replicas: 3,
			wantAllowed: 2, wantHealthy: 3, wantDesired: 1, wantExpected: 3, wantCondReason: api.PDBSufficientPodsReason},
		{name: "a controller without scale fails safe", spec: api.PodDisruptionBudgetSpec{MaxUnavailable: bound("1")},
			pods: []*api.Pod{pod("a", true, func(p *api.Pod) { p.OwnerReferences[0].Kind = "DaemonSet" })}, replicas: 3,
			wantErr: true, wantAllowed: 0, wantCondReason: api.PDBSyncFailedReason},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pdb := &api.PodDisruptionBudget{ObjectMeta: api.ObjectMeta{Name: "b", Namespace: "ns", Generation: 2}, Spec: tc.spec}
			pdb.Status.DisruptedPods = tc.disrupted
			pdb.Status.DisruptionsAllowed = 5 // whatever was there before
			st, recheck, err := Status(pdb, tc.pods, scale(tc.replicas), now)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if st.DisruptionsAllowed != tc.wantAllowed {
				t.Errorf("disruptionsAllowed = %d, want %d", st.DisruptionsAllowed, tc.wantAllowed)
			}
			if st.ObservedGeneration != 2 {
				t.Errorf("observedGeneration = %d, want 2", st.ObservedGeneration)
			}
			if len(st.Conditions) != 1 || st.Conditions[0].Reason != tc.wantCondReason {
				t.Errorf("conditions = %+v, want one of reason %s", st.Conditions, tc.wantCondReason)
			}
			if tc.wantErr {
				return
			}
			if st.CurrentHealthy != tc.wantHealthy || st.DesiredHealthy != tc.wantDesired || st.ExpectedPods != tc.wantExpected {
				t.Errorf("healthy/desired/expected = %d/%d/%d, want %d/%d/%d", st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods,
					tc.wantHealthy, tc.wantDesired, tc.wantExpected)
			}
			if len(st.DisruptedPods) != tc.wantDisrupted {
				t.Errorf("disruptedPods = %v, want %d", st.DisruptedPods, tc.wantDisrupted)
			}
			if (recheck > 0) != tc.wantRecheck {
				t.Errorf("recheck = %v, want one: %v", recheck, tc.wantRecheck)
			}
		})
	}
}

// The condition's transition time stays while its status does.
func TestStatusKeepsTransitionTime(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	two := api.IntOrString("2")
	pdb := &api.PodDisruptionBudget{ObjectMeta: api.ObjectMeta{Name: "b", Namespace: "ns", Generation: 1},
		Spec: api.PodDisruptionBudgetSpec{MinAvailable: &two}}
	none := func(*api.Pod, *api.OwnerReference) (string, int32, error) { return "", 0, errors.New("unused") }
	st, _, _ := Status(pdb, nil, none, t0)
	pdb.Status = st
	st2, _, _ := Status(pdb, nil, none, t0.Add(time.Hour))
	if !st2.Conditions[0].LastTransitionTime.Equal(t0) {
		t.Fatalf("transition time moved to %v without a transition", st2.Conditions[0].LastTransitionTime)
	}
}
