package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/queue"
	"minik8s/test/framework"
)

func createTrigger(b *testing.B, s *framework.APIServer, t *api.Trigger) {
	b.Helper()
	ctx := context.Background()
	if _, err := s.Client.Triggers("default").Create(ctx, t); err != nil {
		b.Fatal(err)
	}
	for i := 0; ; i++ {
		got, err := s.Client.Triggers("default").Get(ctx, t.Name)
		if err == nil && got.Status.Ready {
			return
		}
		if i > 600 {
			b.Fatalf("trigger %s not ready within 30s: %+v %v", t.Name, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchmarkHTTPTriggerWarm compares a warm call through an HTTP trigger on
// the function gateway with the same call sent to the function's Service
// address (a node's Service proxy in between), in one run: one caller
// (latency), then 16 concurrent callers (throughput).
func BenchmarkHTTPTriggerWarm(b *testing.B) {
	s := framework.StartAPIServer(b)
	gw := framework.FreeAddr(b)
	framework.StartFuncRunnerWith(b, s, func(c *funcrunner.Config) { c.GatewayAddress = gw })
	warmFunc(b, s, "echo", echoCode, "RETURN", "")
	service := serveFuncService(b, s, "echo")
	createTrigger(b, s, &api.Trigger{ObjectMeta: api.ObjectMeta{Name: "echo-web"},
		Spec: api.TriggerSpec{Function: "echo", HTTP: &api.HTTPTrigger{Path: "/echo"}}})
	gateway := "http://" + gw + "/echo"
	post(b, gateway, "warm-up")

	// One caller, the two paths taking turns, so that both see the same
	// machine.
	measure := func() (s50, s99, g50, g99 float64) {
		ls := make([]time.Duration, 0, b.N)
		lg := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			post(b, service, "hello")
			t1 := time.Now()
			post(b, gateway, "hello")
			ls, lg = append(ls, t1.Sub(t0)), append(lg, time.Since(t1))
		}
		return percentile(ls, 50), percentile(ls, 99), percentile(lg, 50), percentile(lg, 99)
	}
	parallel := func(url string) (p50, perSec float64) {
		lat, perSec, errs, first := concurrently(b.N, callers, func(int) error { _, err := tryPost(url, "hello", http.StatusOK); return err })
		if errs > 0 {
			b.Fatalf("%d of %d concurrent calls failed, first: %v", errs, b.N, first)
		}
		return percentile(lat, 50), perSec
	}
	b.ResetTimer()
	sp50, sp99, gp50, gp99 := measure()
	scp50, sps := parallel(service)
	gcp50, gps := parallel(gateway)
	b.StopTimer()
	b.ReportMetric(sp50, "service-p50-ms")
	b.ReportMetric(sp99, "service-p99-ms")
	b.ReportMetric(gp50, "gateway-p50-ms")
	b.ReportMetric(gp99, "gateway-p99-ms")
	b.ReportMetric(scp50, "service-c16-p50-ms")
	b.ReportMetric(gcp50, "gateway-c16-p50-ms")
	b.ReportMetric(sps, "service-c16-calls/s")
	b.ReportMetric(gps, "gateway-c16-calls/s")
	if sp50 > 0 && sps > 0 {
		// The figure: the gateway against the Service address.
		b.ReportMetric(gp50/sp50, "p50-ratio")
		b.ReportMetric(gps/sps, "c16-throughput-share")
	}
}

// BenchmarkQueueTrigger sends BENCH_QUEUE_MESSAGES (default 10 000)
// messages through a queue trigger to a warm function that logs every
// call, and, in the same run, publishes as many to a stream nobody
// consumes: messages/s through the trigger against publishing alone. No
// message may be lost, none run twice (nothing fails here).
func BenchmarkQueueTrigger(b *testing.B) {
	n := envInt("BENCH_QUEUE_MESSAGES", 10000)
	nq, err := queue.Start("127.0.0.1", 0, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nq.Close)
	s := startWarm(b)
	framework.StartFuncRunnerWith(b, s, func(c *funcrunner.Config) { c.NATSURL = nq.URL })
	log := filepath.Join(b.TempDir(), "calls.log")
	code := fmt.Sprintf("import fcntl\ndef run(arg):\n    with open(%q, 'a') as f:\n"+
		"        fcntl.flock(f, fcntl.LOCK_EX)\n        f.write(arg + '\\n')\n    return arg\n", log)
	warmFunc(b, s, "sink", code, "RETURN", "")
	createTrigger(b, s, &api.Trigger{ObjectMeta: api.ObjectMeta{Name: "sink-q"},
		Spec: api.TriggerSpec{Function: "sink", Queue: &api.QueueTrigger{Subject: "bench.in"}}})
	nc, err := nats.Connect(nq.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ALONE", Subjects: []string{"alone.in"}}); err != nil {
		b.Fatal(err)
	}
	publishAll := func(subject string) time.Duration {
		t0 := time.Now()
		futures := make([]jetstream.PubAckFuture, 0, n)
		for i := range n {
			f, err := js.PublishAsync(subject, []byte(fmt.Sprintf("m%05d", i)))
			if err != nil {
				b.Fatal(err)
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	b.ResetTimer()
	alone := publishAll("alone.in")
	t0 := time.Now()
	publishAll("bench.in")
	seen := map[string]int{}
	deadline := time.Now().Add(20 * time.Minute)
	for len(seen) < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d messages called after 20 min", len(seen), n)
		}
		time.Sleep(100 * time.Millisecond)
		data, _ := os.ReadFile(log)
		seen = map[string]int{}
		for _, l := range strings.Fields(string(data)) {
			seen[l]++
		}
	}
	through := time.Since(t0)
	b.StopTimer()
	twice := 0
	for _, k := range seen {
		if k > 1 {
			twice++
		}
	}
	if twice > 0 {
		b.Errorf("%d of %d messages ran twice with nothing failing", twice, n)
	}
	b.ReportMetric(float64(n)/alone.Seconds(), "publish-alone-msgs/s")
	b.ReportMetric(float64(n)/through.Seconds(), "trigger-msgs/s")
	b.ReportMetric(alone.Seconds()/through.Seconds(), "trigger-share")
	b.ReportMetric(float64(n-len(seen)), "lost")
	b.ReportMetric(float64(twice), "run-twice")
}

// BenchmarkScheduleTrigger runs a one-second schedule for BENCH_SCHEDULE_SECONDS
// (default 60) with two runners and kills the one firing it halfway (as
// SIGKILL: its Lease lapses); it reports the calls made for the ticks of
// that span (want the span in seconds, ±1) and the ticks called twice.
func BenchmarkScheduleTrigger(b *testing.B) {
	span := time.Duration(envInt("BENCH_SCHEDULE_SECONDS", 60)) * time.Second
	s := framework.StartAPIServer(b)
	runners := []*framework.FuncRunner{framework.StartLocalFuncRunner(b, s), framework.StartFuncRunner(b, s)}
	warmFunc(b, s, "tick", echoCode, "RETURN", "")
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(start))
	createTrigger(b, s, &api.Trigger{ObjectMeta: api.ObjectMeta{Name: "every-second"},
		Spec: api.TriggerSpec{Function: "tick", Schedule: &api.ScheduleTrigger{Cron: "@every 1s"}}})
	time.Sleep(time.Until(start.Add(span / 2)))
	tr, err := s.Client.Triggers("default").Get(ctx, "every-second")
	if err != nil {
		b.Fatal(err)
	}
	killed := tr.Status.ServedBy
	for _, r := range runners {
		if r.Identity == killed {
			r.Kill(b)
		}
	}
	time.Sleep(time.Until(start.Add(span + 3*time.Second))) // the last ticks, fired late, land
	if _, err := s.Client.Triggers("default").Delete(ctx, "every-second", client.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	list, _, err := s.Client.FuncInstances("default").List(ctx, client.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	ticks := map[string]int{}
	for _, inst := range list {
		if inst.Spec.Trigger == nil || inst.Spec.Trigger.Name != "every-second" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, string(inst.Spec.Arg))
		if err != nil {
			b.Fatalf("tick argument %q: %v", inst.Spec.Arg, err)
		}
		if at.After(start) && !at.After(start.Add(span)) {
			ticks[string(inst.Spec.Arg)]++
		}
	}
	doubled := 0
	for _, k := range ticks {
		if k > 1 {
			doubled++
		}
	}
	got := len(ticks)
	want := int(span / time.Second)
	b.ReportMetric(float64(got), "calls")
	b.ReportMetric(float64(want), "seconds")
	b.ReportMetric(float64(doubled), "doubled")
	if got < want-1 || got > want+1 || doubled > 0 {
		b.Errorf("%d calls for a %s one-second schedule (%d doubled), want %d ± 1 and none doubled; firer %s killed halfway",
			got, span, doubled, want, killed)
	}
}
