package qos

import (
	"testing"

	"minik8s/pkg/api"
)

func TestClass(t *testing.T) {
	res := func(req, lim api.ResourceList) api.ResourceRequirements {
		return api.ResourceRequirements{Requests: req, Limits: lim}
	}
	both := api.ResourceList{"cpu": "500m", "memory": "64Mi"}
	for _, tc := range []struct {
		name       string
		containers []api.ResourceRequirements
		want       string
	}{
		{"nothing asked", []api.ResourceRequirements{{}}, "BestEffort"},
		{"limits only: requests are the limits", []api.ResourceRequirements{res(nil, both)}, "Guaranteed"},
		{"requests equal limits", []api.ResourceRequirements{res(both, both)}, "Guaranteed"},
		{"a request below its limit", []api.ResourceRequirements{res(api.ResourceList{"cpu": "100m", "memory": "64Mi"}, both)}, "Burstable"},
		{"one container without", []api.ResourceRequirements{res(both, both), {}}, "Burstable"},
		{"memory only", []api.ResourceRequirements{res(api.ResourceList{"memory": "64Mi"}, nil)}, "Burstable"},
	} {
		p := &api.Pod{}
		for _, r := range tc.containers {
			p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: "c", Resources: r})
		}
		if got := Class(p); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
