package test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// TestQueueTriggerWildcards: queue triggers take subject patterns
// (orders.*, orders.>). JetStream keeps one stream per subject, so
// triggers share the stream whose subject covers theirs, in whichever
// order they come; a trigger whose subject overlaps another's without
// either covering the other is not ready, saying why. Each message calls
// every trigger that takes its subject, with the subject as its topic; a
// failed one goes to deadletter.ITS_SUBJECT; the streams go with the
// triggers.
func TestQueueTriggerWildcards(t *testing.T) {
	srv := startNATS(t)
	s := framework.StartAPIServer(t)
	runRunner(t, funcrunner.Config{Client: s.Client, Identity: "wild-runner", NATSURL: srv.URL})
	ctx := context.Background()
	code := "def run(event, context):\n    if event['metadata']['topic'].startswith('fail.'):\n        raise ValueError('no')\n    return event['metadata']['topic']\n"
	funcTemplate(t, s, "topic", code, "RETURN", "RETURN", nil)
	publish(t, s, "topic", runtime(t, code))
	add := func(name, subject string) {
		t.Helper()
		body := `{"metadata":{"name":"` + name + `"},"spec":{"function":"topic","queue":{"subject":"` + subject + `","maxDeliver":1}}}`
		if code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/triggers", "application/json", []byte(body)); code != http.StatusCreated {
			t.Fatalf("trigger %s on %s: %d %s", name, subject, code, data)
		}
	}
	ready := func(names ...string) {
		t.Helper()
		waitUntil(t, 30*time.Second, "triggers "+strings.Join(names, ", ")+" ready", func() bool {
			for _, n := range names {
				if tr, err := s.Client.Triggers("default").Get(ctx, n); err != nil || !tr.Status.Ready {
					return false
				}
			}
			return true
		})
	}
	// An exact subject first, then a pattern covering it (the stream
	// widens), then one the widened stream covers.
	add("deep-x", "deep.x")
	ready("deep-x")
	add("deep-all", "deep.>")
	ready("deep-all")
	add("deep-star", "deep.*")
	add("fail-star", "fail.*")
	ready("deep-star", "fail-star")
	add("p-one", "p.*.z")
	ready("p-one")
	add("p-two", "p.a.*")
	waitUntil(t, 30*time.Second, "p-two not ready, saying why", func() bool {
		tr, err := s.Client.Triggers("default").Get(ctx, "p-two")
		return err == nil && !tr.Status.Ready && strings.Contains(tr.Status.Message, "overlaps") && strings.Contains(tr.Status.Message, "p.*.z")
	})

	nc, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	dead := make(chan *nats.Msg, 2)
	if _, err := nc.ChanSubscribe("deadletter.>", dead); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"deep.x", "deep.q.r", "fail.one"} {
		if err := nc.Publish(subj, []byte(subj)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"deep-x/deep.x": "", "deep-all/deep.x": "", "deep-star/deep.x": "", "deep-all/deep.q.r": ""}
	var got map[string]string
	waitUntil(t, 30*time.Second, "each trigger that takes a message's subject called once", func() bool {
		list, _, err := s.Client.FuncInstances("default").List(ctx, client.ListOptions{})
		if err != nil {
			return false
		}
		got = map[string]string{}
		for _, inst := range list {
			if inst.Spec.Trigger != nil && inst.Status.Phase == api.InstanceSucceeded {
				got[inst.Spec.Trigger.Name+"/"+string(inst.Status.Result)] = ""
			}
		}
		return len(got) >= len(want)
	})
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("no call %s; calls: %v", k, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	select {
	case m := <-dead:
		if m.Subject != "deadletter.fail.one" || string(m.Data) != "fail.one" {
			t.Errorf("dead letter on %s: %q, want deadletter.fail.one", m.Subject, m.Data)
		}
	case <-time.After(30 * time.Second):
		t.Error("no dead letter for fail.one")
	}

	// Removed, the triggers leave no stream behind.
	for _, n := range []string{"deep-x", "deep-all", "deep-star", "fail-star", "p-one", "p-two"} {
		if _, err := s.Client.Triggers("default").Delete(ctx, n, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, js := jetStream(t, srv.URL)
	waitUntil(t, 30*time.Second, "the streams deleted", func() bool {
		names := js.StreamNames(ctx)
		n := 0
		for range names.Name() {
			n++
		}
		return names.Err() == nil && n == 0
	})
}
