package deployment

import (
	"fmt"
	"testing"
	"time"

	"minik8s/pkg/api"
)

func rsWith(name string, revision, replicas, available int) *rsState {
	n := int32(replicas)
	now := time.Now()
	rs := &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: name, CreationTimestamp: &now,
		Annotations: map[string]string{api.AnnotationRevision: fmt.Sprint(revision)}},
		Spec: api.ReplicaSetSpec{Replicas: &n}}
	return &rsState{rs: rs, replicas: replicas, available: available, current: replicas}
}

func TestPlanRolling(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		newRS                   *rsState
		olds                    []*rsState
		desired, surge, unavail int
		wantNew                 int
		wantOld                 []int
	}{
		{"first step surges", rsWith("n", 2, 0, 0), []*rsState{rsWith("o", 1, 3, 3)}, 3, 1, 0, 1, []int{3}},
		{"new pod not ready: nothing goes", rsWith("n", 2, 1, 0), []*rsState{rsWith("o", 1, 3, 3)}, 3, 1, 0, 1, []int{3}},
		{"new pod ready: an old one goes", rsWith("n", 2, 1, 1), []*rsState{rsWith("o", 1, 3, 3)}, 3, 1, 0, 1, []int{2}},
		{"then another comes", rsWith("n", 2, 1, 1), []*rsState{rsWith("o", 1, 2, 2)}, 3, 1, 0, 2, []int{2}},
		{"unavailable allowed: down at once", rsWith("n", 2, 0, 0), []*rsState{rsWith("o", 1, 3, 3)}, 3, 1, 1, 1, []int{2}},
		{"unhealthy old pods go first", rsWith("n", 3, 1, 1), []*rsState{rsWith("a", 1, 1, 1), rsWith("b", 2, 2, 0)}, 3, 1, 0, 1, []int{1, 1}},
		{"done", rsWith("n", 2, 3, 3), []*rsState{rsWith("o", 1, 0, 0)}, 3, 1, 0, 3, []int{0}},
		{"scaled down", rsWith("n", 2, 5, 5), nil, 3, 1, 0, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			planRolling(tc.newRS, tc.olds, tc.desired, tc.surge, tc.unavail)
			var olds []int
			for _, o := range tc.olds {
				olds = append(olds, o.replicas)
			}
			if tc.newRS.replicas != tc.wantNew || fmt.Sprint(olds) != fmt.Sprint(tc.wantOld) {
				t.Errorf("new %d, old %v; want %d, %v", tc.newRS.replicas, olds, tc.wantNew, tc.wantOld)
			}
		})
	}
}

func TestPlanRecreate(t *testing.T) {
	newRS, old := rsWith("n", 2, 0, 0), rsWith("o", 1, 3, 3)
	planRecreate(newRS, []*rsState{old}, 3)
	if old.replicas != 0 || newRS.replicas != 0 {
		t.Fatalf("while old pods run: new %d, old %d", newRS.replicas, old.replicas)
	}
	old.current = 0
	planRecreate(newRS, []*rsState{old}, 3)
	if newRS.replicas != 3 {
		t.Fatalf("once they are gone: new %d", newRS.replicas)
	}
}
