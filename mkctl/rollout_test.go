package mkctl

import (
	"strings"
	"testing"

	"minik8s/pkg/api"
)

func TestRolloutState(t *testing.T) {
	three := int32(3)
	dep := func(gen, observed int64, st api.DeploymentStatus) *api.Deployment {
		st.ObservedGeneration = observed
		return &api.Deployment{ObjectMeta: api.ObjectMeta{Name: "web", Generation: gen}, Spec: api.DeploymentSpec{Replicas: &three}, Status: st}
	}
	for _, tc := range []struct {
		name, want string
		d          *api.Deployment
		done, fail bool
	}{
		{"not observed", "spec update to be observed", dep(2, 1, api.DeploymentStatus{}), false, false},
		{"updating", "1 out of 3 new replicas have been updated", dep(2, 2, api.DeploymentStatus{UpdatedReplicas: 1, Replicas: 4}), false, false},
		{"old pending", "1 old replicas are pending termination", dep(2, 2, api.DeploymentStatus{UpdatedReplicas: 3, Replicas: 4}), false, false},
		{"unavailable", "2 of 3 updated replicas are available", dep(2, 2, api.DeploymentStatus{UpdatedReplicas: 3, Replicas: 3, AvailableReplicas: 2}), false, false},
		{"done", `deployment "web" successfully rolled out`, dep(2, 2, api.DeploymentStatus{UpdatedReplicas: 3, Replicas: 3, AvailableReplicas: 3}), true, false},
		{"deadline", "exceeded its progress deadline", dep(2, 2, api.DeploymentStatus{Conditions: []api.DeploymentCondition{{Type: api.DeploymentProgressing, Status: api.ConditionFalse, Reason: api.ReasonProgressDeadlineExceeded}}}), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, done, err := rolloutState(tc.d)
			got := msg
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) || done != tc.done || (err != nil) != tc.fail {
				t.Errorf("rolloutState = %q, %v, %v; want %q, %v, fail %v", msg, done, err, tc.want, tc.done, tc.fail)
			}
		})
	}
}
