package test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// metaCode is a function that answers with what it was called with.
const metaCode = `import json
def run(event, context):
    return json.dumps({"data": event["data"], "metadata": event["metadata"], "context": context})
`

// called is metaCode's answer.
type called struct {
	Data     any               `json:"data"`
	Metadata api.FuncEvent     `json:"metadata"`
	Context  map[string]any    `json:"context"`
	Config   map[string]string `json:"-"`
}

func readCalled(t *testing.T, result string) called {
	t.Helper()
	var c called
	if err := json.Unmarshal([]byte(result), &c); err != nil {
		t.Fatalf("the function's answer %q: %v", result, err)
	}
	c.Config = map[string]string{}
	if cfg, ok := c.Context["config"].(map[string]any); ok {
		for k, v := range cfg {
			c.Config[k], _ = v.(string)
		}
	}
	return c
}

// ceCall sends a request and returns the status, the content type and the body.
func ceCall(t *testing.T, method, url string, header map[string]string, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), data
}

// ceEvent is a structured CloudEvent as an answer carries it.
type ceEvent struct {
	SpecVersion string          `json:"specversion"`
	ID          string          `json:"id"`
	Source      string          `json:"source"`
	Type        string          `json:"type"`
	Subject     string          `json:"subject"`
	Time        string          `json:"time"`
	Data        json.RawMessage `json:"data"`
}

func readCE(t *testing.T, contentType string, body []byte) ceEvent {
	t.Helper()
	if contentType != "application/cloudevents+json" {
		t.Fatalf("answer of type %q, not a CloudEvent: %s", contentType, body)
	}
	var e ceEvent
	if err := json.Unmarshal(body, &e); err != nil || e.SpecVersion != "1.0" || e.ID == "" || e.Source == "" || e.Time == "" {
		t.Fatalf("answer event %s: %v", body, err)
	}
	return e
}

// TestTriggerEvents: every way of calling a function reaches a
// run(event, context) with the event's metadata and the call's context,
// the app's config merged in; CloudEvents in binary and structured mode
// arrive with their attributes on the function API and on the gateway;
// results and errors go back as CloudEvents; each call's record keeps its
// event.
func TestTriggerEvents(t *testing.T) {
	srv := startNATS(t)
	s := framework.StartAPIServer(t)
	gw := framework.FreeAddr(t)
	runRunner(t, funcrunner.Config{Client: s.Client, Identity: "ev-runner", GatewayAddress: gw, NATSURL: srv.URL})
	ctx := context.Background()
	funcTemplate(t, s, "meta", metaCode, "RETURN", "RETURN", nil)
	publish(t, s, "meta", runtime(t, metaCode))
	boomCode := "def run(arg):\n    raise ValueError('boom ' + arg)\n"
	funcTemplate(t, s, "boom", boomCode, "RETURN", "RETURN", nil)
	publish(t, s, "boom", runtime(t, boomCode))

	mkObj := func(coll, body string) {
		t.Helper()
		if code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/"+coll, "application/json", []byte(body)); code != http.StatusCreated {
			t.Fatalf("create in %s: %d %s", coll, code, data)
		}
	}
	mkObj("apps", `{"metadata":{"name":"shop"},"spec":{"config":{"region":"eu","tier":"silver"}}}`)
	if code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/triggers", "application/json",
		[]byte(`{"metadata":{"name":"noapp"},"spec":{"function":"meta","app":"nope","http":{"path":"/noapp"}}}`)); code != http.StatusUnprocessableEntity ||
		!strings.Contains(string(data), "spec.app") {
		t.Errorf("a trigger of a missing app: %d %s", code, data)
	}
	mkObj("triggers", `{"metadata":{"name":"meta-web"},"spec":{"function":"meta","app":"shop","config":{"tier":"gold"},"http":{"path":"/meta"}}}`)
	mkObj("triggers", `{"metadata":{"name":"boom-web"},"spec":{"function":"boom","http":{"path":"/boom"}}}`)
	waitUntil(t, 30*time.Second, "the routes ready", func() bool {
		a, err1 := s.Client.Triggers("default").Get(ctx, "meta-web")
		b, err2 := s.Client.Triggers("default").Get(ctx, "boom-web")
		return err1 == nil && err2 == nil && a.Status.Ready && b.Status.Ready
	})

	// A plain request on the gateway: method, path, query and headers.
	req, _ := http.NewRequest("GET", "http://"+gw+"/meta?x=1&x=2", nil)
	req.Header.Set("X-Order", "o-9")
	req.Header.Set("Authorization", "Bearer not-for-functions")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Header.Get(function.HeaderInstanceID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /meta: %s %s", resp.Status, body)
	}
	c := readCalled(t, string(body))
	m := c.Metadata
	if m.Method != "GET" || m.Path != "/meta" || strings.Join(m.Query["x"], ",") != "1,2" || m.Headers["X-Order"] != "o-9" ||
		m.Type != "io.minik8s.trigger.http" || m.ID != id || m.SpecVersion != "1.0" {
		t.Errorf("metadata of a gateway call: %+v", m)
	}
	if v := m.Headers["Authorization"]; v != "[redacted]" {
		t.Errorf("the caller's credentials reached the function: %v", m.Headers)
	}
	if c.Context["function-name"] != "meta" || c.Context["namespace"] != "default" || c.Context["instance-id"] != id ||
		c.Context["trigger"] != "http/meta-web" || c.Config["region"] != "eu" || c.Config["tier"] != "gold" {
		t.Errorf("context of a gateway call: %v", c.Context)
	}
	waitUntil(t, 30*time.Second, "the gateway call's record with its event", func() bool {
		inst, err := s.Client.FuncInstances("default").Get(ctx, id)
		return err == nil && inst.Spec.Event != nil && inst.Spec.Event.Path == "/meta" && inst.Spec.Trigger != nil &&
			inst.Spec.Trigger.App == "shop" && inst.Spec.Trigger.Config["tier"] == "gold"
	})

	// A structured CloudEvent on the gateway, the answer as a CloudEvent.
	code, ctype, data := ceCall(t, "POST", "http://"+gw+"/meta", map[string]string{
		"Content-Type": "application/cloudevents+json", "Accept": "application/cloudevents+json"},
		`{"specversion":"1.0","id":"order-1","source":"/shop/orders","type":"com.example.order.created","subject":"o-1",`+
			`"datacontenttype":"application/json","data":{"qty":3}}`)
	if code != http.StatusOK {
		t.Fatalf("structured event on the gateway: %d %s", code, data)
	}
	ev := readCE(t, ctype, data)
	if ev.Type != "io.minik8s.func.result" {
		t.Errorf("answer type %q", ev.Type)
	}
	c = readCalled(t, string(ev.Data))
	if m := c.Metadata; m.ID != "order-1" || m.Source != "/shop/orders" || m.Type != "com.example.order.created" || m.Subject != "o-1" ||
		m.Method != "POST" || m.Path != "/meta" {
		t.Errorf("metadata of a structured event: %+v", m)
	}
	if d, _ := c.Data.(map[string]any); d["qty"] != float64(3) {
		t.Errorf("data of a structured event: %#v", c.Data)
	}

	// A binary CloudEvent on the function API.
	code, ctype, data = ceCall(t, "POST", s.URL+"/api/funcs/meta?wait=30s", map[string]string{
		"Ce-Specversion": "1.0", "Ce-Id": "pay-7", "Ce-Source": "/billing", "Ce-Type": "com.example.paid",
		"Ce-Time": "2026-11-26T10:00:00Z", "Ce-Tenant": "acme", "Content-Type": "text/plain",
		"Accept": "application/cloudevents+json"}, "paid")
	if code != http.StatusOK {
		t.Fatalf("binary event on the function API: %d %s", code, data)
	}
	ev = readCE(t, ctype, data)
	c = readCalled(t, string(ev.Data))
	if m := c.Metadata; m.ID != "pay-7" || m.Source != "/billing" || m.Type != "com.example.paid" || m.Time != "2026-11-26T10:00:00Z" ||
		m.Extensions["tenant"] != "acme" || m.DataContentType != "text/plain" || c.Data != "paid" {
		t.Errorf("a binary event on the API: %+v data %#v", m, c.Data)
	}
	if c.Context["trigger"] != "" || c.Context["instance-id"] != ev.Subject {
		t.Errorf("context of an API call: %v (answer subject %q)", c.Context, ev.Subject)
	}
	// A bad event is a bad request naming the attribute; nothing runs.
	code, _, data = ceCall(t, "POST", s.URL+"/api/funcs/meta?wait=30s", map[string]string{
		"Ce-Specversion": "1.0", "Ce-Id": "x", "Ce-Type": "t"}, "x")
	if code != http.StatusBadRequest || !strings.Contains(string(data), "source") {
		t.Errorf("an event without a source: %d %s", code, data)
	}
	// So is an event of a version not read here, on the API and the
	// gateway alike: not a plain call that drops its attributes.
	for _, url := range []string{s.URL + "/api/funcs/meta?wait=30s", "http://" + gw + "/meta"} {
		code, _, data = ceCall(t, "POST", url, map[string]string{
			"Ce-Specversion": "0.3x", "Ce-Id": "x", "Ce-Source": "/s", "Ce-Type": "t"}, "x")
		if code != http.StatusBadRequest || !strings.Contains(string(data), `0.3x\" is not a CloudEvents version`) {
			t.Errorf("%s: an event of specversion 0.3x: %d %s", url, code, data)
		}
	}

	// Errors come back as error events {message, type, trace}.
	for _, url := range []string{s.URL + "/api/funcs/boom?wait=30s", "http://" + gw + "/boom"} {
		code, ctype, data = ceCall(t, "POST", url, map[string]string{"Accept": "application/cloudevents+json"}, "now")
		ev = readCE(t, ctype, data)
		var e struct{ Message, Type, Trace string }
		_ = json.Unmarshal(ev.Data, &e)
		if ev.Type != "io.minik8s.func.error" || !strings.Contains(e.Message, "boom now") || e.Type != "ValueError" ||
			!strings.Contains(e.Trace, "Traceback") {
			t.Errorf("error event from %s: %d %s", url, code, data)
		}
	}

	// A schedule and a queue: their events reach the function.
	mkObj("triggers", `{"metadata":{"name":"meta-tick"},"spec":{"function":"meta","app":"shop","schedule":{"cron":"@every 1s"}}}`)
	mkObj("triggers", `{"metadata":{"name":"meta-q"},"spec":{"function":"meta","queue":{"subject":"meta.in"}}}`)
	waitUntil(t, 30*time.Second, "the queue trigger ready", func() bool {
		tr, err := s.Client.Triggers("default").Get(ctx, "meta-q")
		return err == nil && tr.Status.Ready
	})
	_, js := jetStream(t, srv.URL)
	msg := nats.NewMsg("meta.in")
	msg.Data = []byte(`{"sku":"a1"}`)
	msg.Header.Set("ce-specversion", "1.0")
	msg.Header.Set("ce-id", "stock-1")
	msg.Header.Set("ce-source", "/warehouse")
	msg.Header.Set("ce-type", "com.example.stock")
	msg.Header.Set("content-type", "application/json")
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "meta.in", []byte("plain message")); err != nil {
		t.Fatal(err)
	}
	var tick, stock, plainMsg *called
	waitUntil(t, 60*time.Second, "a tick and both messages called", func() bool {
		list, _, err := s.Client.FuncInstances("default").List(ctx, client.ListOptions{})
		if err != nil {
			return false
		}
		for _, inst := range list {
			if inst.Status.Phase != api.InstanceSucceeded || inst.Spec.Trigger == nil {
				continue
			}
			got := readCalled(t, string(inst.Status.Result))
			switch {
			case inst.Spec.Trigger.Name == "meta-tick":
				tick = &got
			case got.Metadata.ID == "stock-1":
				stock = &got
			case got.Data == "plain message":
				plainMsg = &got
			}
		}
		return tick != nil && stock != nil && plainMsg != nil
	})
	if m := tick.Metadata; m.Type != "io.minik8s.trigger.schedule" || m.Source != "/api/v1/namespaces/default/triggers/meta-tick" ||
		m.Time == "" || tick.Context["trigger"] != "schedule/meta-tick" || tick.Config["region"] != "eu" || tick.Config["tier"] != "silver" {
		t.Errorf("a tick's call: %+v %v", m, tick.Context)
	}
	if m := stock.Metadata; m.Source != "/warehouse" || m.Type != "com.example.stock" || m.Topic != "meta.in" || stock.Context["trigger"] != "queue/meta-q" {
		t.Errorf("a CloudEvent message's call: %+v %v", m, stock.Context)
	}
	if d, _ := stock.Data.(map[string]any); d["sku"] != "a1" {
		t.Errorf("a CloudEvent message's data: %#v", stock.Data)
	}
	if m := plainMsg.Metadata; m.Type != "io.minik8s.trigger.queue" || m.Subject != "meta.in" || m.Topic != "meta.in" || m.ID == "" {
		t.Errorf("a plain message's call: %+v", m)
	}
}
