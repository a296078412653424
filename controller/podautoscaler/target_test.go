package podautoscaler

import (
	"testing"

	"minik8s/pkg/api"
)

// TestTargetPath: the scale subresource of a Deployment, ReplicaSet or
// StatefulSet target; any other kind is an error, never a Deployment of
// the name.
func TestTargetPath(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		want             string
	}{
		{"apps/v1", "Deployment", "/apis/apps/v1/namespaces/ns/deployments/web/scale"},
		{"apps/v1", "ReplicaSet", "/apis/apps/v1/namespaces/ns/replicasets/web/scale"},
		{"apps/v1", "StatefulSet", "/apis/apps/v1/namespaces/ns/statefulsets/web/scale"},
		{"", "StatefulSet", "/apis/apps/v1/namespaces/ns/statefulsets/web/scale"},
		{"apps/v1", "DaemonSet", ""},
		{"example.com/v1", "StatefulSet", ""},
		{"v1", "Pod", ""},
	} {
		h := &api.HorizontalPodAutoscaler{ObjectMeta: api.ObjectMeta{Name: "hpa", Namespace: "ns"},
			Spec: api.HorizontalPodAutoscalerSpec{ScaleTargetRef: api.CrossVersionObjectReference{APIVersion: tc.apiVersion, Kind: tc.kind, Name: "web"}}}
		got, err := targetPath(h)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("%s %s: %q %v, want %q", tc.apiVersion, tc.kind, got, err, tc.want)
		}
	}
}
