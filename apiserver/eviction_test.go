package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"minik8s/pkg/api"
)

// The eviction subresource, as Kubernetes' EvictionREST: a budget's
// allowed disruption is taken, none left is a 429 kubectl drain retries,
// pods that count for nothing go freely, and only those who may create
// pods/eviction in the pod's namespace evict.
func TestEviction(t *testing.T) {
	et := newEngineTest(t)
	const (
		pods = "/api/v1/namespaces/team-a/pods"
		pdbs = "/apis/policy/v1/namespaces/team-a/poddisruptionbudgets"
	)
	patch := func(target, body string) {
		et.t.Helper()
		if a := et.doType("PATCH", target, body, "application/merge-patch+json", ""); a.code != http.StatusOK {
			et.t.Fatalf("PATCH %s: %d %s", target, a.code, a.body)
		}
	}
	mkPod := func(name, phase string, ready bool, labels string) {
		et.mustDo("POST", pods, `{"metadata":{"name":"`+name+`","labels":{`+labels+`}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, http.StatusCreated)
		if phase == "" {
			return
		}
		status := "False"
		if ready {
			status = "True"
		}
		patch(pods+"/"+name+"/status", `{"status":{"phase":"`+phase+`","conditions":[{"type":"Ready","status":"`+status+`"}]}}`)
	}
	for _, n := range []string{"a", "b", "c"} {
		mkPod(n, "Running", true, `"app":"web"`)
	}
	mkPod("sick", "Running", false, `"app":"web"`)
	mkPod("new", "", false, `"app":"web"`) // Pending
	mkPod("free", "Running", true, `"app":"other"`)
	et.mustDo("POST", pdbs, `{"metadata":{"name":"web"},"spec":{"minAvailable":2,"selector":{"matchLabels":{"app":"web"}}}}`, http.StatusCreated)
	setBudget := func(allowed, healthy, desired int, generation int) {
		et.t.Helper()
		patch(pdbs+"/web/status", fmt.Sprintf(`{"status":{"observedGeneration":%d,"disruptionsAllowed":%d,"currentHealthy":%d,"desiredHealthy":%d,"expectedPods":5}}`,
			generation, allowed, healthy, desired))
	}
	evict := func(name, query, token string) answer {
		et.t.Helper()
		return et.do("POST", pods+"/"+name+"/eviction"+query,
			`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"`+name+`","namespace":"team-a"}}`, token)
	}
	budget := func() api.PodDisruptionBudget {
		et.t.Helper()
		var pdb api.PodDisruptionBudget
		if err := json.Unmarshal([]byte(et.mustDo("GET", pdbs+"/web", "", http.StatusOK).body), &pdb); err != nil {
			t.Fatal(err)
		}
		return pdb
	}
	gone := func(name string) bool { return et.do("GET", pods+"/"+name, "", "").code == http.StatusNotFound }

	// A budget its controller has not read yet allows nothing.
	if a := evict("a", "", ""); a.code != http.StatusTooManyRequests || !strings.Contains(a.body, "still being processed") {
		t.Fatalf("eviction under an unread budget: %d %s, want 429 saying it is being processed", a.code, a.body)
	}
	setBudget(1, 3, 2, 1)
	// Dry run: allowed, nothing taken, nothing deleted.
	if a := evict("a", "?dryRun=All", ""); a.code != http.StatusCreated || gone("a") || budget().Status.DisruptionsAllowed != 1 {
		t.Fatalf("dry-run eviction: %d %s; pod gone %v, budget %+v", a.code, a.body, gone("a"), budget().Status)
	}
	// Another namespace's editor may not; this one's may.
	if a := evict("a", "", editBToken); a.code != http.StatusForbidden {
		t.Fatalf("team-b's editor evicting in team-a: %d %s, want 403", a.code, a.body)
	}
	if a := evict("a", "", editAToken); a.code != http.StatusCreated || !strings.Contains(a.body, `"status":"Success"`) {
		t.Fatalf("eviction allowed by the budget: %d %s, want 201 Success", a.code, a.body)
	}
	if !gone("a") {
		t.Fatal("the evicted pod is still there")
	}
	pdb := budget()
	if _, ok := pdb.Status.DisruptedPods["a"]; pdb.Status.DisruptionsAllowed != 0 || !ok {
		t.Fatalf("budget after the eviction: %+v, want 0 allowed and a among the disrupted", pdb.Status)
	}
	// None left: 429 with Kubernetes' words and cause, the pod kept.
	a := evict("b", "", "")
	var st api.Status
	_ = json.Unmarshal([]byte(a.body), &st)
	if a.code != http.StatusTooManyRequests || st.Reason != "TooManyRequests" ||
		st.Message != "Cannot evict pod as it would violate the pod's disruption budget." ||
		st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != "DisruptionBudget" ||
		!strings.Contains(st.Details.Causes[0].Message, "needs 2 healthy pods and has 3 currently") {
		t.Fatalf("eviction past the budget: %d %s", a.code, a.body)
	}
	if gone("b") {
		t.Fatal("a pod the budget protects was deleted")
	}
	// Pods that count for nothing go: not ready while the budget is
	// healthy, not started, not covered.
	for _, name := range []string{"sick", "new", "free"} {
		if a := evict(name, "", ""); a.code != http.StatusCreated || !gone(name) {
			t.Fatalf("evicting %s: %d %s", name, a.code, a.body)
		}
	}
	// The body names the pod of the URL; two budgets over a pod is a 500.
	if a := et.do("POST", pods+"/b/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"c"}}`, ""); a.code != http.StatusBadRequest {
		t.Fatalf("eviction naming another pod: %d %s, want 400", a.code, a.body)
	}
	et.mustDo("POST", pdbs, `{"metadata":{"name":"web2"},"spec":{"maxUnavailable":1,"selector":{"matchLabels":{"app":"web"}}}}`, http.StatusCreated)
	if a := evict("b", "", ""); a.code != http.StatusInternalServerError || !strings.Contains(a.body, "more than one PodDisruptionBudget") {
		t.Fatalf("eviction under two budgets: %d %s, want 500", a.code, a.body)
	}
}
