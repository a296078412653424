package admission

import (
	"strings"
	"testing"

	"minik8s/pkg/api"
)

func container(name string, req, lim api.ResourceList) api.Container {
	return api.Container{Name: name, Image: "i", Resources: api.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestLimitPod(t *testing.T) {
	ranges := []*api.LimitRange{{ObjectMeta: api.ObjectMeta{Name: "lr"}, Spec: api.LimitRangeSpec{Limits: []api.LimitRangeItem{
		{Type: api.LimitTypeContainer, Max: api.ResourceList{"cpu": "1"}, Min: api.ResourceList{"cpu": "50m"},
			Default: api.ResourceList{"cpu": "500m", "memory": "128Mi"}, DefaultRequest: api.ResourceList{"cpu": "100m", "memory": "64Mi"},
			MaxLimitRequestRatio: api.ResourceList{"cpu": "5"}},
		{Type: api.LimitTypePod, Max: api.ResourceList{"memory": "200Mi"}},
	}}}}
	tests := []struct {
		name       string
		containers []api.Container
		errs       []string // substrings, one per error
		wantReq    string   // the first container's cpu request after
		wantLim    string
	}{
		{name: "defaults fill what is unset", containers: []api.Container{container("a", nil, nil)}, wantReq: "100m", wantLim: "500m"},
		{name: "what is set stays", containers: []api.Container{container("a", api.ResourceList{"cpu": "200m"}, api.ResourceList{"cpu": "800m"})},
			wantReq: "200m", wantLim: "800m"},
		{name: "over the max", containers: []api.Container{container("a", api.ResourceList{"cpu": "1"}, api.ResourceList{"cpu": "2"})},
			errs: []string{"maximum cpu usage per Container is 1, but limit is 2"}},
		{name: "under the min", containers: []api.Container{container("a", api.ResourceList{"cpu": "10m"}, nil)},
			errs: []string{"minimum cpu usage per Container is 50m, but request is 10m", "cpu max limit to request ratio per Container is 5, but provided ratio is 50"}},
		{name: "the pod's sum over its max", containers: []api.Container{container("a", nil, nil), container("b", nil, nil)},
			errs: []string{"maximum memory usage per Pod is 200Mi, but limit is 256Mi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p"}, Spec: api.PodSpec{Containers: tt.containers}}
			errs := LimitPod(pod, ranges)
			if len(errs) != len(tt.errs) {
				t.Fatalf("errors %q, want %d like %q", errs, len(tt.errs), tt.errs)
			}
			for i, want := range tt.errs {
				if !strings.Contains(errs[i], want) {
					t.Errorf("error %d: %q, want %q", i, errs[i], want)
				}
			}
			c := pod.Spec.Containers[0].Resources
			if tt.wantReq != "" && (c.Requests["cpu"] != tt.wantReq || c.Limits["cpu"] != tt.wantLim) {
				t.Errorf("cpu request %s limit %s, want %s and %s", c.Requests["cpu"], c.Limits["cpu"], tt.wantReq, tt.wantLim)
			}
		})
	}
	pod := &api.Pod{Spec: api.PodSpec{Containers: []api.Container{container("web", nil, nil)}}}
	LimitPod(pod, ranges)
	if got := pod.Annotations[AnnotationLimitRanger]; got != "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit for container web" {
		t.Errorf("annotation %q", got)
	}
}
