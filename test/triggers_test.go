package test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/controller/garbagecollector"
	"minik8s/funcrunner"
	"minik8s/mkctl"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// TestTriggerAPI: triggers are stored and listed per function; bad input
// (a missing function, a cron expression that does not parse, a path
// already taken, a subject starting with a wildcard) is 422 naming the field, and nothing
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
		{trig("wild", `"queue":{"subject":"*.created"}`), "spec.queue.subject", "must start with a literal token"},
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

	// A runner's records of trigger calls, many at once: taken whole, or
	// refused naming the item, with nothing stored.
	insts := s.URL + "/api/v1/namespaces/default/funcinstances"
	record := func(id, fn string) string {
		return `{"metadata":{"name":"` + id + `"},"spec":{"function":"` + fn + `","arg":"a","trigger":{"name":"web"}},` +
			`"status":{"phase":"Succeeded","result":"a","hops":1}}`
	}
	records := func(items ...string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"FuncInstanceList","items":[` + strings.Join(items, ",") + `]}`)
	}
	code, data = httpDo(t, "POST", insts, "application/json", records(record("rec-1", "hello"), record("rec-2", "Not A Name")))
	var refused map[string]any
	_ = json.Unmarshal(data, &refused)
	if code != http.StatusUnprocessableEntity || refused["field"] != "items[1].spec.function" {
		t.Errorf("records with a bad item: %d %s, want 422 on items[1].spec.function", code, data)
	}
	if code, data = httpDo(t, "GET", insts+"/rec-1", "", nil); code != http.StatusNotFound {
		t.Errorf("the good record of a refused list: %d %s, want 404", code, data)
	}
	if code, data = httpDo(t, "POST", insts, "application/json", records(record("rec-1", "hello"), record("rec-2", "hello"))); code != http.StatusAccepted {
		t.Fatalf("records: %d %s", code, data)
	}
	for _, id := range []string{"rec-1", "rec-2"} {
		// Stored in the next batch.
		waitUntil(t, 10*time.Second, "record "+id+" stored", func() bool {
			code, data = httpDo(t, "GET", insts+"/"+id, "", nil)
			return code == http.StatusOK && strings.Contains(string(data), `"trigger":{"name":"web"`)
		})
	}

	// A trigger belongs to its function: deleting the function deletes
	// its triggers (they would stay ready, calling a function that is
	// gone), and only its own.
	ctx := context.Background()
	hello, err := s.Client.Funcs("default").Get(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	web, err := s.Client.Triggers("default").Get(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if refs := web.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Func" || refs[0].Name != "hello" || refs[0].UID != hello.UID {
		t.Errorf("trigger web's owners: %+v, want func hello (uid %s)", refs, hello.UID)
	}
	funcTemplate(t, s, "other", "def run(arg):\n    return arg\n", "RETURN", "RETURN", nil)
	if code, out := post(`{"metadata":{"name":"keep"},"spec":{"function":"other","schedule":{"cron":"@every 1h"}}}`); code != http.StatusCreated {
		t.Fatalf("create keep: %d %v", code, out)
	}
	framework.StartControllers(t, s, controller.Config{Controllers: []string{garbagecollector.Name}})
	if _, err := s.Client.Funcs("default").Delete(ctx, "hello", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the triggers of the deleted function deleted", func() bool {
		list, _, err := s.Client.Triggers("default").List(ctx, client.ListOptions{})
		return err == nil && len(list) == 1 && list[0].Name == "keep"
	})
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

// TestHTTPTrigger: a runner with a gateway serves a trigger's path once
// it is added, marks it ready, calls the function with the request body
// and answers with the result; the call's record names the trigger;
// methods are enforced, and a removed trigger's path is gone.
func TestHTTPTrigger(t *testing.T) {
	s := framework.StartSecureAPIServer(t, "runner-token,system:funcrunner:gw,u1,\"system:funcrunners\"\n")
	gw := framework.FreeAddr(t)
	rc := s.SecureClient(t, client.Config{Token: "runner-token"})
	runRunner(t, funcrunner.Config{Client: rc, Identity: "gw-runner", GatewayAddress: gw})
	code := "def run(arg):\n    return 'hi ' + arg\n"
	funcTemplate(t, s, "greet", code, "RETURN", "RETURN", nil)
	publish(t, s, "greet", runtime(t, code))
	mk := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := mkctl.Run(context.Background(), append([]string{"--server", s.URL}, args...), &out, &errOut); code != 0 {
			t.Fatalf("mkctl %v: %d %s", args, code, errOut.String())
		}
		return out.String()
	}
	// mkctl trigger add returns once the gateway serves the route.
	mk("trigger", "add", "http", "greet-web", "--function", "greet", "--path", "/greet", "--method", "POST")
	if tr, err := s.Client.Triggers("default").Get(context.Background(), "greet-web"); err != nil || !tr.Status.Ready || tr.Status.ServedBy != "gw-runner" {
		t.Fatalf("the trigger after mkctl trigger add: %+v %v", tr, err)
	}
	if ls := mk("trigger", "ls"); !strings.Contains(ls, "greet-web") || !strings.Contains(ls, "POST /greet") || !strings.Contains(ls, "true") {
		t.Errorf("mkctl trigger ls:\n%s", ls)
	}
	resp, err := http.Post("http://"+gw+"/greet", "text/plain", strings.NewReader("there"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Header.Get(function.HeaderInstanceID)
	if resp.StatusCode != http.StatusOK || string(data) != "hi there" || id == "" {
		t.Fatalf("POST /greet on the gateway: %s %q (instance %q)", resp.Status, data, id)
	}
	waitUntil(t, 30*time.Second, "the call's record", func() bool {
		inst, err := s.Client.FuncInstances("default").Get(context.Background(), id)
		return err == nil && inst.Status.Phase == "Succeeded" && inst.Spec.Trigger != nil &&
			inst.Spec.Trigger.Name == "greet-web" && inst.Spec.Trigger.Type == "http"
	})
	if resp, err := http.Get("http://" + gw + "/greet"); err != nil {
		t.Fatal(err)
	} else {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" || !strings.Contains(string(data), "takes POST, not GET") {
			t.Errorf("GET on a POST route: %d, Allow %q, %s", resp.StatusCode, resp.Header.Get("Allow"), data)
		}
	}
	if status, data := httpDo(t, "POST", "http://"+gw+"/nope", "text/plain", nil); status != http.StatusNotFound {
		t.Errorf("a path no trigger serves: %d %s", status, data)
	}
	// A forged record through the API is still refused.
	forged := `{"metadata":{"name":"forged"},"spec":{"function":"greet"},"status":{"phase":"Succeeded","result":"x"}}`
	if status, _ := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/funcinstances", "application/json", []byte(forged)); status != http.StatusMethodNotAllowed {
		t.Errorf("a REST create of an instance naming no trigger: %d, want 405", status)
	}
	checkHTTPAnswers(t, s, gw, mk)
	mk("trigger", "rm", "greet-web")
	waitUntil(t, 30*time.Second, "the path gone", func() bool {
		status, _ := httpDo(t, "POST", "http://"+gw+"/greet", "text/plain", nil)
		return status == http.StatusNotFound
	})
}

// TestScheduleTrigger: a one-second schedule is fired by one runner at a
// time; when that runner dies the other takes over and fires the ticks it
// missed late: every tick between the trigger's creation and its last
// fire is called exactly once.
func TestScheduleTrigger(t *testing.T) {
	t.Parallel()
	s := framework.StartAPIServer(t)
	runners := []*framework.FuncRunner{framework.StartFuncRunner(t, s), framework.StartFuncRunner(t, s)}
	code := "def run(arg):\n    return 'tick ' + arg\n"
	funcTemplate(t, s, "ticker", code, "RETURN", "RETURN", nil)
	publish(t, s, "ticker", runtime(t, code))
	ctx := context.Background()
	body := `{"metadata":{"name":"every-second"},"spec":{"function":"ticker","schedule":{"cron":"@every 1s"}}}`
	if status, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/triggers", "application/json", []byte(body)); status != http.StatusCreated {
		t.Fatalf("create trigger: %d %s", status, data)
	}
	var holder string
	waitUntil(t, 30*time.Second, "the schedule ready", func() bool {
		tr, err := s.Client.Triggers("default").Get(ctx, "every-second")
		holder = tr.Status.ServedBy
		return err == nil && tr.Status.Ready
	})
	time.Sleep(4 * time.Second)
	for _, r := range runners {
		if r.Identity == holder {
			r.Kill(t) // as SIGKILL: its Lease lapses, nobody lets it go
		}
	}
	waitUntil(t, 30*time.Second, "another runner firing", func() bool {
		tr, err := s.Client.Triggers("default").Get(ctx, "every-second")
		return err == nil && tr.Status.ServedBy != holder && tr.Status.ServedBy != ""
	})
	time.Sleep(3 * time.Second)
	if status, data := httpDo(t, "DELETE", s.URL+"/api/v1/namespaces/default/triggers/every-second", "", nil); status != http.StatusOK {
		t.Fatalf("delete trigger: %d %s", status, data)
	}
	time.Sleep(time.Second) // a tick in flight lands
	list, _, err := s.Client.FuncInstances("default").List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ticks []time.Time
	for _, inst := range list {
		if inst.Spec.Trigger == nil || inst.Spec.Trigger.Name != "every-second" || inst.Spec.Trigger.Type != "schedule" {
			continue
		}
		if inst.Spec.Trigger.Schedule != "@every 1s" {
			t.Errorf("a tick's call records the schedule %q, want @every 1s (its context's schedule)", inst.Spec.Trigger.Schedule)
		}
		at, err := time.Parse(time.RFC3339Nano, string(inst.Spec.Arg))
		if err != nil {
			t.Fatalf("tick argument %q: %v", inst.Spec.Arg, err)
		}
		ticks = append(ticks, at)
	}
	slices.SortFunc(ticks, func(a, b time.Time) int { return a.Compare(b) })
	if len(ticks) < 8 {
		t.Fatalf("%d ticks in over 8 s: %v", len(ticks), ticks)
	}
	for i := 1; i < len(ticks); i++ {
		if d := ticks[i].Sub(ticks[i-1]); d != time.Second {
			t.Errorf("ticks %s and %s are %s apart: a tick doubled or dropped", ticks[i-1].Format(time.RFC3339), ticks[i].Format(time.RFC3339), d)
		}
	}
	// Every tick's call ran (the function wrote its result).
	waitUntil(t, 30*time.Second, "every tick's call ended", func() bool {
		list, _, err := s.Client.FuncInstances("default").List(ctx, client.ListOptions{})
		if err != nil {
			return false
		}
		for _, inst := range list {
			if inst.Spec.Trigger != nil && inst.Spec.Trigger.Name == "every-second" &&
				(inst.Status.Phase != "Succeeded" || inst.Status.Result != "tick "+inst.Spec.Arg) {
				return false
			}
		}
		return true
	})
}

// checkHTTPAnswers: a run(event, context) that returns {"statusCode",
// "headers", "body"} answers with them on the gateway and on a
// synchronous API call (there without cookies, and sandboxed: the
// apiserver is not the function's origin), unless the caller asks for
// the instance (Accept: application/json); a result JSON encodes is
// application/json; a malformed answer is 502 naming the mistake.
func checkHTTPAnswers(t *testing.T, s *framework.APIServer, gw string, mk func(...string) string) {
	t.Helper()
	answer := "def run(event, context):\n    if event['data'] == 'bad':\n        return {'statusCode': 201, 'headers': {'Bad Name': 'x'}}\n" +
		"    return {'statusCode': 201, 'headers': {'X-Made': event['data'], 'Set-Cookie': 'a=b'}, 'body': 'made ' + event['data']}\n"
	jsonOut := "def run(arg):\n    return {'n': len(arg)}\n"
	for name, code := range map[string]string{"answer": answer, "jsonout": jsonOut} {
		funcTemplate(t, s, name, code, "RETURN", "RETURN", nil)
		publish(t, s, name, runtime(t, code))
		mk("trigger", "add", "http", name+"-web", "--function", name, "--path", "/"+name)
	}
	post := func(url, accept, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "text/plain")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(data)
	}
	resp, body := post("http://"+gw+"/answer", "", "it")
	if resp.StatusCode != http.StatusCreated || body != "made it" || resp.Header.Get("X-Made") != "it" || resp.Header.Get("Set-Cookie") != "a=b" {
		t.Errorf("the gateway's answer of a function's HTTP answer: %s %v %q", resp.Status, resp.Header, body)
	}
	resp, body = post("http://"+gw+"/answer", "", "bad")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, `invalid header \"Bad Name\"`) {
		t.Errorf("a malformed HTTP answer: %s %q", resp.Status, body)
	}
	resp, body = post("http://"+gw+"/jsonout", "", "abc")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || body != `{"n": 3}` {
		t.Errorf("a JSON result on the gateway: %s %v %q", resp.Status, resp.Header, body)
	}
	resp, body = post(s.URL+"/api/funcs/answer?wait=30s", "", "api")
	if resp.StatusCode != http.StatusCreated || body != "made api" || resp.Header.Get("X-Made") != "api" || resp.Header.Get("Set-Cookie") != "" ||
		resp.Header.Get("Content-Security-Policy") != "sandbox" || resp.Header.Get(function.HeaderInstanceID) == "" {
		t.Errorf("a synchronous API call of a function's HTTP answer: %s %v %q", resp.Status, resp.Header, body)
	}
	resp, body = post(s.URL+"/api/funcs/answer?wait=30s", "application/json", "view")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"instanceId"`) || !strings.Contains(body, `statusCode`) {
		t.Errorf("a synchronous API call asking for the instance: %s %q", resp.Status, body)
	}
}
