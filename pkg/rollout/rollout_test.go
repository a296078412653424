package rollout

import (
	"testing"

	"minik8s/pkg/api"
)

func ios(s string) *api.IntOrString { v := api.IntOrString(s); return &v }

func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		name                string
		surge, unavail      *api.IntOrString
		desired             int
		wantSurge, wantUnav int
		wantErr             bool
	}{
		{"defaults of 4", nil, nil, 4, 1, 1, false},
		{"defaults of 3 round surge up, unavailable down", nil, nil, 3, 1, 0, false},
		{"numbers", ios("2"), ios("1"), 3, 2, 1, false},
		{"both zero make progress", ios("0"), ios("0"), 3, 0, 1, false},
		{"percentages", ios("50%"), ios("50%"), 5, 3, 2, false},
		{"unavailable capped", ios("0"), ios("10"), 3, 0, 3, false},
		{"bad", ios("x"), nil, 3, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &api.Deployment{Spec: api.DeploymentSpec{Strategy: api.DeploymentStrategy{RollingUpdate: &api.RollingUpdateDeployment{MaxSurge: tc.surge, MaxUnavailable: tc.unavail}}}}
			s, u, err := Bounds(d, tc.desired)
			if (err != nil) != tc.wantErr || (!tc.wantErr && (s != tc.wantSurge || u != tc.wantUnav)) {
				t.Errorf("Bounds = %d, %d, %v; want %d, %d (error %v)", s, u, err, tc.wantSurge, tc.wantUnav, tc.wantErr)
			}
		})
	}
}

func TestTemplateHashIgnoresItsLabel(t *testing.T) {
	tmpl := api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "a"}}}}
	h := TemplateHash(tmpl)
	labelled := tmpl
	labelled.Labels = map[string]string{"app": "web", api.LabelPodTemplateHash: h}
	if got := TemplateHash(labelled); got != h || h == "" {
		t.Errorf("hash with its label %q, without %q", got, h)
	}
	other := tmpl
	other.Spec = api.PodSpec{Containers: []api.Container{{Name: "c", Image: "b"}}}
	if TemplateHash(other) == h {
		t.Errorf("two templates hash alike: %q", h)
	}
}

// TestHashCollisionCount: a Deployment that never collided keeps its
// template's hash (its ReplicaSets keep their names); each collision
// gives another.
func TestHashCollisionCount(t *testing.T) {
	tmpl := api.PodTemplateSpec{Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "a"}}}}
	count := func(n int32) *int32 { return &n }
	seen := map[string]string{}
	for _, tc := range []struct {
		name  string
		count *int32
	}{{"no collision", nil}, {"one", count(1)}, {"two", count(2)}} {
		d := &api.Deployment{Spec: api.DeploymentSpec{Template: tmpl}, Status: api.DeploymentStatus{CollisionCount: tc.count}}
		h := Hash(d)
		if tc.count == nil && h != TemplateHash(tmpl) {
			t.Errorf("%s: %q, want the template's %q", tc.name, h, TemplateHash(tmpl))
		}
		if other, ok := seen[h]; ok {
			t.Errorf("%s hashes as %s: %q", tc.name, other, h)
		}
		seen[h] = tc.name
	}
}
