package cache

import (
	"slices"
	"testing"

	"minik8s/pkg/api"
)

func TestControllerHandler(t *testing.T) {
	yes, no := true, false
	pod := func(refs ...api.OwnerReference) *api.Pod {
		return &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: refs}}
	}
	tests := []struct {
		name string
		pod  *api.Pod
		want []string
	}{
		{"controlled by a Job", pod(api.OwnerReference{Kind: "Job", Name: "pi", Controller: &yes}), []string{"ns/pi", "ns/pi", "ns/pi"}},
		{"controlled by another kind", pod(api.OwnerReference{Kind: "ReplicaSet", Name: "web", Controller: &yes}), nil},
		{"owned, not controlled", pod(api.OwnerReference{Kind: "Job", Name: "pi", Controller: &no}), nil},
		{"no owner", pod(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			h := ControllerHandler[*api.Pod]("Job", func(key string) { got = append(got, key) })
			h.OnAdd(tt.pod)
			h.OnUpdate(pod(), tt.pod)
			h.OnDelete(tt.pod)
			if !slices.Equal(got, tt.want) {
				t.Errorf("keys %v, want %v (one per add, update, delete)", got, tt.want)
			}
		})
	}
}
