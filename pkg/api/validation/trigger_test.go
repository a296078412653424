package validation

import (
	"strings"
	"testing"

	"minik8s/pkg/api"
)

func TestTriggerValidation(t *testing.T) {
	base := func(mut func(*api.Trigger)) *api.Trigger {
		tr := &api.Trigger{ObjectMeta: api.ObjectMeta{Name: "t", Namespace: "default"}, Spec: api.TriggerSpec{Function: "f"}}
		mut(tr)
		Default(api.TriggersResource, tr)
		return tr
	}
	cases := []struct {
		name  string
		mut   func(*api.Trigger)
		field string // "" for valid
	}{
		{"http", func(t *api.Trigger) { t.Spec.HTTP = &api.HTTPTrigger{Path: "/hello", Methods: []string{"get", "POST"}} }, ""},
		{"schedule every", func(t *api.Trigger) { t.Spec.Schedule = &api.ScheduleTrigger{Cron: "@every 1s"} }, ""},
		{"schedule seconds", func(t *api.Trigger) { t.Spec.Schedule = &api.ScheduleTrigger{Cron: "*/5 * * * * *"} }, ""},
		{"schedule minutes", func(t *api.Trigger) {
			t.Spec.Schedule = &api.ScheduleTrigger{Cron: "0 9 * * MON-FRI", TimeZone: "Europe/Paris"}
		}, ""},
		{"schedule hourly", func(t *api.Trigger) { t.Spec.Schedule = &api.ScheduleTrigger{Cron: "@hourly"} }, ""},
		{"queue", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "orders.created"} }, ""},
		{"filters", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "orders"}
			t.Spec.Filters = []api.TriggerFilter{{Exact: map[string]string{"type": "com.shop.order"}}, {Prefix: map[string]string{"source": "/shop", "region": "eu"}}}
		}, ""},
		{"filter with both dialects", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "orders"}
			t.Spec.Filters = []api.TriggerFilter{{Exact: map[string]string{"type": "a"}, Prefix: map[string]string{"source": "/"}}}
		}, "spec.filters[0]"},
		{"empty filter", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "orders"}
			t.Spec.Filters = []api.TriggerFilter{{}}
		}, "spec.filters[0]"},
		{"filter on a bad attribute name", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "orders"}
			t.Spec.Filters = []api.TriggerFilter{{Exact: map[string]string{"Type": "a"}}}
		}, "spec.filters[0].exact[Type]"},
		{"no function", func(t *api.Trigger) { t.Spec.Function = ""; t.Spec.HTTP = &api.HTTPTrigger{Path: "/a"} }, "spec.function"},
		{"bad function", func(t *api.Trigger) { t.Spec.Function = "RETURN"; t.Spec.HTTP = &api.HTTPTrigger{Path: "/a"} }, "spec.function"},
		{"no kind", func(*api.Trigger) {}, "spec"},
		{"two kinds", func(t *api.Trigger) {
			t.Spec.HTTP = &api.HTTPTrigger{Path: "/a"}
			t.Spec.Queue = &api.QueueTrigger{Subject: "a"}
		}, "spec"},
		{"relative path", func(t *api.Trigger) { t.Spec.HTTP = &api.HTTPTrigger{Path: "hello"} }, "spec.http.path"},
		{"path with query", func(t *api.Trigger) { t.Spec.HTTP = &api.HTTPTrigger{Path: "/a?b=c"} }, "spec.http.path"},
		{"path with dots", func(t *api.Trigger) { t.Spec.HTTP = &api.HTTPTrigger{Path: "/a/../b"} }, "spec.http.path"},
		{"bad method", func(t *api.Trigger) { t.Spec.HTTP = &api.HTTPTrigger{Path: "/a", Methods: []string{"FETCH"}} }, "spec.http.methods[0]"},
		{"method twice", func(t *api.Trigger) { t.Spec.HTTP = &api.HTTPTrigger{Path: "/a", Methods: []string{"GET", "get"}} }, "spec.http.methods[1]"},
		{"cron does not parse", func(t *api.Trigger) { t.Spec.Schedule = &api.ScheduleTrigger{Cron: "every minute"} }, "spec.schedule.cron"},
		{"cron out of range", func(t *api.Trigger) { t.Spec.Schedule = &api.ScheduleTrigger{Cron: "0 61 * * *"} }, "spec.schedule.cron"},
		{"bad zone", func(t *api.Trigger) { t.Spec.Schedule = &api.ScheduleTrigger{Cron: "@hourly", TimeZone: "Mars/Base"} }, "spec.schedule.timeZone"},
		{"zone in expression", func(t *api.Trigger) { t.Spec.Schedule = &api.ScheduleTrigger{Cron: "CRON_TZ=UTC @hourly"} }, "spec.schedule.cron"},
		{"wildcard subject", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "orders.*"} }, ""},
		{"tail wildcard", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "orders.>"} }, ""},
		{"wildcards", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "orders.*.eu.>"} }, ""},
		{"wildcard first", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "*.new"} }, "spec.queue.subject"},
		{"everything", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: ">"} }, "spec.queue.subject"},
		{"wildcard in a token", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "orders.n*"} }, "spec.queue.subject"},
		{"> before the end", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "orders.>.eu"} }, "spec.queue.subject"},
		{"dead letter per subject", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "orders.new", DeadLetterSubject: "failed.>"}
		}, ""},
		{"dead letter with *", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "orders.new", DeadLetterSubject: "failed.*"}
		}, "spec.queue.deadLetterSubject"},
		{"dead letter the trigger takes", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "orders.>", DeadLetterSubject: "orders.dead"}
		}, "spec.queue.deadLetterSubject"},
		{"dead letters back on the subject", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "orders.>", DeadLetterSubject: "orders.>"}
		}, "spec.queue.deadLetterSubject"},
		{"empty token", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "orders..x"} }, "spec.queue.subject"},
		{"JetStream API as dead letter", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "a", DeadLetterSubject: "$JS.API.STREAM.DELETE.x"}
		}, "spec.queue.deadLetterSubject"},
		{"system subject", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "$SYS.REQ.SERVER.PING"} }, "spec.queue.subject"},
		{"reply inbox", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "_INBOX.abc"} }, "spec.queue.subject"},
		{"dead letter is the subject", func(t *api.Trigger) {
			t.Spec.Queue = &api.QueueTrigger{Subject: "a", DeadLetterSubject: "a"}
		}, "spec.queue.deadLetterSubject"},
		{"max deliver", func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "a", MaxDeliver: -1} }, "spec.queue.maxDeliver"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := base(tc.mut)
			if err := names(Object(api.TriggersResource, tr), tc.field); err != "" {
				t.Fatal(err)
			}
		})
	}
	// Defaults: methods in upper case, five deliveries, a dead-letter subject.
	tr := base(func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "orders"} })
	if tr.Spec.Queue.MaxDeliver != api.DefaultMaxDeliver || tr.Spec.Queue.DeadLetterSubject != "deadletter.orders" {
		t.Errorf("queue defaults: %+v", tr.Spec.Queue)
	}
	tr = base(func(t *api.Trigger) { t.Spec.Queue = &api.QueueTrigger{Subject: "orders.*"} })
	if tr.Spec.Queue.DeadLetterSubject != "deadletter.>" {
		t.Errorf("a wildcard subject's dead letters go to %q, want deadletter.> (each to deadletter.ITS_SUBJECT)", tr.Spec.Queue.DeadLetterSubject)
	}
	tr = base(func(t *api.Trigger) { t.Spec.HTTP = &api.HTTPTrigger{Path: "/a", Methods: []string{"get"}} })
	if strings.Join(tr.Spec.HTTP.Methods, ",") != "GET" {
		t.Errorf("methods: %v", tr.Spec.HTTP.Methods)
	}
}
