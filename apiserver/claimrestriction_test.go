package apiserver

import (
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

func TestClaimOnly(t *testing.T) {
	warm := func() *api.Pod {
		return &api.Pod{ObjectMeta: api.ObjectMeta{Name: "func-warm-x", Labels: map[string]string{function.LabelWarm: "abc", "keep": "v"},
			Annotations: map[string]string{"a": "b"}},
			Spec: function.WarmPodSpec("img")}
	}
	claim := func(p *api.Pod) *api.Pod {
		p.Labels = map[string]string{function.LabelFunc: "f", function.LabelCode: "h", "keep": "v"}
		p.Annotations = map[string]string{"a": "b", function.AnnotationClaimed: "2026-11-29T00:00:00Z"}
		return p
	}
	yes := true
	cases := []struct {
		name string
		cur  func() *api.Pod
		next func(*api.Pod) *api.Pod
		want string // "" admitted, else a part of the reason
	}{
		{"a claim", warm, claim, ""},
		{"not warm", func() *api.Pod { p := warm(); delete(p.Labels, function.LabelWarm); return p }, claim, "not a warm pod"},
		{"warm label kept", warm, func(p *api.Pod) *api.Pod { p = claim(p); p.Labels[function.LabelWarm] = "abc"; return p }, "must remove"},
		{"no function label", warm, func(p *api.Pod) *api.Pod { p = claim(p); delete(p.Labels, function.LabelFunc); return p }, "must set labels"},
		{"another label", warm, func(p *api.Pod) *api.Pod { p = claim(p); p.Labels["app"] = "web"; return p }, "may not set label app"},
		{"a label removed", warm, func(p *api.Pod) *api.Pod { p = claim(p); delete(p.Labels, "keep"); return p }, "may not remove label keep"},
		{"another annotation", warm, func(p *api.Pod) *api.Pod { p = claim(p); p.Annotations["x"] = "y"; return p }, "no annotation"},
		{"no claim time", warm, func(p *api.Pod) *api.Pod { p = claim(p); delete(p.Annotations, function.AnnotationClaimed); return p }, "no annotation"},
		{"an owner", warm, func(p *api.Pod) *api.Pod {
			p = claim(p)
			p.OwnerReferences = []api.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "u", Controller: &yes}}
			return p
		}, "owners"},
		{"the spec", warm, func(p *api.Pod) *api.Pod { p = claim(p); p.Spec.Containers[0].Image = "evil"; return p }, "spec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := claimOnly(tc.cur(), tc.next(tc.cur()))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("claimOnly = %q, want %q", got, tc.want)
			}
		})
	}
}
