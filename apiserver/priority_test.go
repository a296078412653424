package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"minik8s/pkg/api"
)

// Priority admission, as Kubernetes' plugin: a pod gets the value and
// preemption policy of the class it names or of the global default,
// a missing class or a priority of its own is refused (403), and the
// system classes are kube-system's alone.
func TestPriorityAdmission(t *testing.T) {
	et := newEngineTest(t)
	if err := et.s.ensurePriorityClasses(context.Background()); err != nil {
		t.Fatal(err)
	}
	const classes = "/apis/scheduling.k8s.io/v1/priorityclasses"
	et.mustDo("POST", classes, `{"metadata":{"name":"high"},"value":1000}`, http.StatusCreated)
	et.mustDo("POST", classes, `{"metadata":{"name":"polite"},"value":500,"preemptionPolicy":"Never"}`, http.StatusCreated)
	pod := func(ns, name, spec string) (string, string) {
		return "/api/v1/namespaces/" + ns + "/pods",
			`{"metadata":{"name":"` + name + `"},"spec":{` + spec + `"containers":[{"name":"c","image":"nginx"}]}}`
	}
	type want struct {
		code     int
		says     string
		class    string
		priority int32
		policy   string
	}
	cases := []struct {
		name, ns, spec, token string
		want                  want
	}{
		{"no class, no default", "team-a", ``, "", want{code: http.StatusCreated, priority: 0, policy: "PreemptLowerPriority"}},
		{"existing class", "team-a", `"priorityClassName":"high",`, editAToken, want{code: http.StatusCreated, class: "high", priority: 1000, policy: "PreemptLowerPriority"}},
		{"preemption policy copied", "team-a", `"priorityClassName":"polite",`, "", want{code: http.StatusCreated, class: "polite", priority: 500, policy: "Never"}},
		{"priority agreeing", "team-a", `"priorityClassName":"high","priority":1000,`, "", want{code: http.StatusCreated, class: "high", priority: 1000, policy: "PreemptLowerPriority"}},
		{"missing class", "team-a", `"priorityClassName":"nope",`, "", want{code: http.StatusForbidden, says: "no PriorityClass with name nope was found"}},
		{"priority of its own", "team-a", `"priority":7,`, "", want{code: http.StatusForbidden, says: "the integer value of priority (7) must not be provided in pod spec"}},
		{"policy of its own", "team-a", `"priorityClassName":"polite","preemptionPolicy":"PreemptLowerPriority",`, "", want{code: http.StatusForbidden, says: "the string value of PreemptionPolicy"}},
		{"system class in team-a", "team-a", `"priorityClassName":"system-cluster-critical",`, editAToken, want{code: http.StatusForbidden, says: "may be used only by pods in the kube-system namespace"}},
		{"system class in team-a by an admin", "team-a", `"priorityClassName":"system-node-critical",`, "", want{code: http.StatusForbidden, says: "may be used only by pods in the kube-system namespace"}},
		{"system class in kube-system", "kube-system", `"priorityClassName":"system-node-critical",`, "", want{code: http.StatusCreated, class: "system-node-critical", priority: 2000001000, policy: "PreemptLowerPriority"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target, body := pod(c.ns, "p"+string(rune('a'+i)), c.spec)
			a := et.do("POST", target, body, c.token)
			if a.code != c.want.code || !strings.Contains(a.body, c.want.says) {
				t.Fatalf("%d %s, want %d saying %q", a.code, a.body, c.want.code, c.want.says)
			}
			if a.code != http.StatusCreated {
				return
			}
			var p api.Pod
			if err := json.Unmarshal([]byte(a.body), &p); err != nil {
				t.Fatal(err)
			}
			if p.Spec.PriorityClassName != c.want.class || p.Spec.Priority == nil || *p.Spec.Priority != c.want.priority ||
				p.Spec.PreemptionPolicy == nil || string(*p.Spec.PreemptionPolicy) != c.want.policy {
				t.Fatalf("pod spec: class %q priority %v policy %v, want %+v", p.Spec.PriorityClassName, p.Spec.Priority, p.Spec.PreemptionPolicy, c.want)
			}
		})
	}

	// A global default names itself on pods that name no class; a
	// second default is refused.
	et.mustDo("POST", classes, `{"metadata":{"name":"usual"},"value":100,"globalDefault":true}`, http.StatusCreated)
	if a := et.do("POST", classes, `{"metadata":{"name":"usual2"},"value":50,"globalDefault":true}`, ""); a.code != http.StatusForbidden ||
		!strings.Contains(a.body, "PriorityClass usual is already marked as default") {
		t.Fatalf("a second default class: %d %s, want 403", a.code, a.body)
	}
	target, body := pod("team-a", "defaulted", "")
	var p api.Pod
	if err := json.Unmarshal([]byte(et.mustDo("POST", target, body, http.StatusCreated).body), &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.PriorityClassName != "usual" || p.Spec.Priority == nil || *p.Spec.Priority != 100 {
		t.Fatalf("pod under a default class: class %q priority %v, want usual 100", p.Spec.PriorityClassName, p.Spec.Priority)
	}
	// Pod update validation keeps the spec's priority and class.
	for _, patch := range []string{`{"spec":{"priority":5}}`, `{"spec":{"priorityClassName":"high"}}`} {
		if a := et.doType("PATCH", target+"/defaulted", patch, "application/merge-patch+json", ""); a.code != http.StatusUnprocessableEntity {
			t.Fatalf("patching %s: %d %s, want 422", patch, a.code, a.body)
		}
	}

	// Only cluster admins write classes; the system ones stay, with
	// their values, and users' stay under a billion.
	if a := et.do("POST", classes, `{"metadata":{"name":"mine"},"value":10}`, editAToken); a.code != http.StatusForbidden {
		t.Fatalf("an editor creating a PriorityClass: %d %s, want 403", a.code, a.body)
	}
	if a := et.do("DELETE", classes+"/system-node-critical", "", ""); a.code != http.StatusForbidden || !strings.Contains(a.body, "cannot be deleted") {
		t.Fatalf("deleting a system class: %d %s, want 403", a.code, a.body)
	}
	for _, c := range []string{`{"metadata":{"name":"huge"},"value":1000000001}`, `{"metadata":{"name":"system-mine"},"value":10}`} {
		if a := et.do("POST", classes, c, ""); a.code != http.StatusUnprocessableEntity {
			t.Fatalf("creating %s: %d %s, want 422", c, a.code, a.body)
		}
	}
	var pc api.PriorityClass
	if err := json.Unmarshal([]byte(et.mustDo("GET", classes+"/system-cluster-critical", "", http.StatusOK).body), &pc); err != nil {
		t.Fatal(err)
	}
	if pc.Value != 2000000000 || pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != "PreemptLowerPriority" ||
		!strings.HasPrefix(pc.Description, "Used for system critical pods that must run in the cluster") {
		t.Fatalf("system-cluster-critical: %+v", pc)
	}
}
