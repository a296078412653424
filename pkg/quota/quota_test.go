package quota

import (
	"testing"

	"minik8s/pkg/api"
)

func pod(phase string, req, lim api.ResourceList) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p"}, Spec: api.PodSpec{Containers: []api.Container{
		{Name: "a", Resources: api.ResourceRequirements{Requests: req, Limits: lim}},
		{Name: "b", Resources: api.ResourceRequirements{Requests: req, Limits: lim}}}}, Status: api.PodStatus{Phase: phase}}
}

func TestOf(t *testing.T) {
	hard := api.ResourceList{"pods": "5", "requests.cpu": "2", "memory": "1Gi", "limits.cpu": "4", "count/pods": "9",
		"services": "2", "services.nodeports": "1", "count/deployments.apps": "3"}
	q := &api.ResourceQuota{Spec: api.ResourceQuotaSpec{Hard: hard}}
	scoped := &api.ResourceQuota{Spec: api.ResourceQuotaSpec{Hard: hard, Scopes: []string{api.QuotaScopeBestEffort}}}
	running := pod(api.PodRunning, api.ResourceList{"cpu": "250m", "memory": "64Mi"}, api.ResourceList{"cpu": "1"})
	tests := []struct {
		name string
		q    *api.ResourceQuota
		res  api.Resource
		obj  api.Object
		want map[string]string
	}{
		{"a pod", q, api.PodsResource, running,
			map[string]string{"pods": "1", "count/pods": "1", "requests.cpu": "500m", "memory": "128Mi", "limits.cpu": "2"}},
		{"an ended pod takes nothing", q, api.PodsResource, pod(api.PodSucceeded, api.ResourceList{"cpu": "1"}, nil), map[string]string{}},
		{"a NodePort service", q, api.ServicesResource, &api.Service{Spec: api.ServiceSpec{Type: "NodePort", Ports: []api.ServicePort{{Port: 80}}}},
			map[string]string{"services": "1", "services.nodeports": "1"}},
		{"a deployment by count/", q, api.DeploymentsResource, &api.Deployment{}, map[string]string{"count/deployments.apps": "1"}},
		{"a scoped quota counts pods of its scope only", scoped, api.PodsResource, running, map[string]string{}},
		{"and not other kinds", scoped, api.ServicesResource, &api.Service{}, map[string]string{}},
		{"a best-effort pod is in the scope", scoped, api.PodsResource, pod(api.PodPending, nil, nil), map[string]string{"pods": "1", "count/pods": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Of(tt.q, tt.res, tt.obj)
			if len(got) != len(tt.want) {
				t.Fatalf("usage %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				q := got[k]
				if q.String() != v {
					t.Errorf("%s: %s, want %s", k, q.String(), v)
				}
			}
		})
	}
}

func TestUnspecified(t *testing.T) {
	q := &api.ResourceQuota{Spec: api.ResourceQuotaSpec{Hard: api.ResourceList{"requests.cpu": "1", "limits.memory": "1Gi", "pods": "3"}}}
	p := pod(api.PodPending, api.ResourceList{"cpu": "100m"}, nil)
	got := Unspecified(q, p)
	if len(got) != 1 || got[0] != "limits.memory for: a,b" {
		t.Fatalf("unspecified %q", got)
	}
}
