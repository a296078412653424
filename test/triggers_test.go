package test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"minik8s/test/framework"
)

// TestTriggerAPI: triggers are stored and listed per function; bad input
// (a missing function, a cron expression that does not parse, a path
// already taken, a wildcard subject) is 422 naming the field, and nothing
// is written.
func TestTriggerAPI(t *testing.T) {
	s := framework.StartAPIServer(t)
	funcTemplate(t, s, "hello", "def run(arg):\n    return arg\n", "RETURN", "RETURN", nil)
	coll := s.URL + "/api/v1/namespaces/default/triggers"
	post := func(body string) (int, map[string]any) {
		t.Helper()
		code, data := httpDo(t, "POST", coll, "application/json", []byte(body))
		var out map[string]any
		_ = json.Unmarshal(data, &out)
		return code, out
	}
	trig := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"Trigger","metadata":{"name":"` + name + `"},"spec":{"function":"hello",` + spec + `}}`
	}
	for _, ok := range []string{
		trig("web", `"http":{"path":"/hello","methods":["get","POST"]}`),
		trig("tick", `"schedule":{"cron":"@every 1s"}`),
		trig("orders", `"queue":{"subject":"orders.created"}`),
	} {
		if code, out := post(ok); code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", ok, code, out)
		}
	}
	for _, bad := range []struct{ body, field, says string }{
		{`{"metadata":{"name":"nofn"},"spec":{"function":"missing","http":{"path":"/x"}}}`, "spec.function", `function "missing" does not exist`},
		{trig("badcron", `"schedule":{"cron":"every minute"}`), "spec.schedule.cron", "does not parse"},
		{trig("taken", `"http":{"path":"/hello"}`), "spec.http.path", "already taken by trigger default/web"},
		{trig("wild", `"queue":{"subject":"orders.*"}`), "spec.queue.subject", "wildcard"},
		{trig("both", `"http":{"path":"/b"},"queue":{"subject":"b"}`), "spec", "exactly one of"},
	} {
		code, out := post(bad.body)
		if code != http.StatusUnprocessableEntity || out["field"] != bad.field || !strings.Contains(out["error"].(string), bad.says) {
			t.Errorf("create %s: %d %v, want 422 on %s saying %q", bad.body, code, out, bad.field, bad.says)
		}
	}
	// The gateway is one for every namespace: a path is taken across them.
	nsBody := `{"metadata":{"name":"kube-hello"},"spec":{"function":"hello","http":{"path":"/hello"}}}`
	funcTemplateNS(t, s, "kube-system", "hello")
	if code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/kube-system/triggers", "application/json", []byte(nsBody)); code != http.StatusUnprocessableEntity {
		t.Errorf("a path taken in another namespace: %d %s", code, data)
	}
	code, data := httpDo(t, "GET", coll, "", nil)
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Spec     map[string]any
		}
	}
	if err := json.Unmarshal(data, &list); code != http.StatusOK || err != nil {
		t.Fatalf("list: %d %s", code, data)
	}
	var names []string
	for _, i := range list.Items {
		names = append(names, i.Metadata.Name)
	}
	if strings.Join(names, ",") != "orders,tick,web" {
		t.Errorf("triggers %v, want orders, tick and web only", names)
	}
	// Defaults are stored: upper-case methods, deliveries, dead letters.
	code, data = httpDo(t, "GET", coll+"/orders", "", nil)
	if code != http.StatusOK || !strings.Contains(string(data), `"maxDeliver":5`) || !strings.Contains(string(data), `"deadLetterSubject":"deadletter.orders.created"`) {
		t.Errorf("queue trigger: %d %s", code, data)
	}
	if code, data = httpDo(t, "GET", coll+"/web", "", nil); !strings.Contains(string(data), `"methods":["GET","POST"]`) {
		t.Errorf("http trigger: %d %s", code, data)
	}
}

// funcTemplateNS stores a trivial function in namespace ns.
func funcTemplateNS(t *testing.T, s *framework.APIServer, ns, name string) {
	t.Helper()
	body := `{"apiVersion":"v1","kind":"Func","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"spec":{"name":"` + name +
		`","function":"ZGVmIHJ1bihhKToKICAgIHJldHVybiBhCg==","left":"RETURN","right":"RETURN","maxInstanceNum":1}}`
	if code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/"+ns+"/funcs", "application/json", []byte(body)); code != http.StatusCreated {
		t.Fatalf("create func %s/%s: %d %s", ns, name, code, data)
	}
}
