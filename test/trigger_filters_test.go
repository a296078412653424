package test

import (
	"context"
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

// TestTriggerFilters: a trigger calls its function only for the events
// that pass every one of its filters (CloudEvents attributes, exact or by
// prefix, extensions included): on the gateway the others get 204 naming
// the trigger, and on a queue they are acknowledged; neither makes a call.
func TestTriggerFilters(t *testing.T) {
	srv := startNATS(t)
	s := framework.StartAPIServer(t)
	gw := framework.FreeAddr(t)
	runRunner(t, funcrunner.Config{Client: s.Client, Identity: "filter-runner", GatewayAddress: gw, NATSURL: srv.URL})
	ctx := context.Background()
	code := "def run(arg):\n    return 'took ' + arg\n"
	funcTemplate(t, s, "took", code, "RETURN", "RETURN", nil)
	publish(t, s, "took", runtime(t, code))
	mustMkctl(t, s, "trigger", "add", "http", "orders-web", "--function", "took", "--path", "/orders",
		"--filter-prefix", "type=com.shop.order.", "--filter", "source=/shop")
	for _, body := range []string{
		`{"metadata":{"name":"orders-eu"},"spec":{"function":"took","queue":{"subject":"orders.filtered"},
		  "filters":[{"exact":{"region":"eu"}}]}}`,
	} {
		if code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/triggers", "application/json", []byte(body)); code != http.StatusCreated {
			t.Fatalf("create trigger: %d %s", code, data)
		}
	}
	waitUntil(t, 30*time.Second, "the triggers ready", func() bool {
		a, err1 := s.Client.Triggers("default").Get(ctx, "orders-web")
		b, err2 := s.Client.Triggers("default").Get(ctx, "orders-eu")
		return err1 == nil && err2 == nil && a.Status.Ready && b.Status.Ready
	})
	calls := func() int {
		list, _, err := s.Client.FuncInstances("default").List(ctx, client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}

	post := func(ceType, source, data string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", "http://"+gw+"/orders", strings.NewReader(data))
		req.Header.Set("Ce-Specversion", "1.0")
		req.Header.Set("Ce-Id", "e-"+data)
		req.Header.Set("Ce-Type", ceType)
		req.Header.Set("Ce-Source", source)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, body := post("com.shop.order.created", "/shop", "o1"); resp.StatusCode != http.StatusOK || body != "took o1" {
		t.Fatalf("an event that passes: %d %q", resp.StatusCode, body)
	}
	for _, ev := range []struct{ typ, source string }{{"com.shop.refund", "/shop"}, {"com.shop.order.created", "/shop/eu"}} {
		if resp, body := post(ev.typ, ev.source, "x"); resp.StatusCode != http.StatusNoContent || resp.Header.Get(function.HeaderFiltered) != "orders-web" {
			t.Errorf("an event of type %s from %s: %d %q (%s %q), want 204 filtered", ev.typ, ev.source, resp.StatusCode, body,
				function.HeaderFiltered, resp.Header.Get(function.HeaderFiltered))
		}
	}
	// The gateway's records are stored in batches after the answers.
	waitUntil(t, 30*time.Second, "the passing call's record", func() bool { return calls() >= 1 })
	time.Sleep(200 * time.Millisecond)
	if n := calls(); n != 1 {
		t.Errorf("%d calls after one event that passed, want 1", n)
	}

	nc, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, region := range []string{"us", "eu"} {
		m := nats.NewMsg("orders.filtered")
		m.Header.Set("Ce-Specversion", "1.0")
		m.Header.Set("Ce-Id", "m-"+region)
		m.Header.Set("Ce-Type", "com.shop.order")
		m.Header.Set("Ce-Source", "/shop")
		m.Header.Set("Ce-Region", region)
		m.Data = []byte(region)
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 30*time.Second, "the eu message's call", func() bool {
		list, _, err := s.Client.FuncInstances("default").List(ctx, client.ListOptions{})
		if err != nil {
			return false
		}
		for _, inst := range list {
			if inst.Spec.Trigger != nil && inst.Spec.Trigger.Name == "orders-eu" && inst.Status.Phase == api.InstanceSucceeded {
				return string(inst.Spec.Arg) == "eu"
			}
		}
		return false
	})
	// The us message came first on the stream: it was taken without a call.
	time.Sleep(200 * time.Millisecond)
	if n := calls(); n != 2 {
		t.Errorf("%d calls, want 2: the us message must make none", n)
	}
}
