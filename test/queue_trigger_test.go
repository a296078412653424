package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"minik8s/funcrunner"
	"minik8s/mkctl"
	"minik8s/pkg/client"
	"minik8s/pkg/queue"
	"minik8s/test/framework"
)

// TestQueueTrigger: messages of a NATS subject each call the function
// once, shared by two runners; a message whose call fails is tried
// maxDeliver times, then published to the dead-letter subject.
func TestQueueTrigger(t *testing.T) {
	srv := startNATS(t)
	s := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	var done []chan error
	for i := range 2 {
		ch := make(chan error, 1)
		done = append(done, ch)
		go func() {
			ch <- funcrunner.Run(ctx, funcrunner.Config{Client: s.Client, Identity: fmt.Sprintf("q-runner-%d", i), NATSURL: srv.URL})
		}()
	}
	t.Cleanup(func() {
		cancel()
		for _, ch := range done {
			if err := <-ch; err != nil {
				t.Errorf("runner: %v", err)
			}
		}
	})
	code := "def run(arg):\n    if arg.startswith('bad'):\n        raise ValueError('bad message ' + arg)\n    return 'done ' + arg\n"
	funcTemplate(t, s, "consume", code, "RETURN", "RETURN", nil)
	publish(t, s, "consume", runtime(t, code))

	var out, errOut bytes.Buffer
	if rc := mkctl.Run(context.Background(), []string{"--server", s.URL, "trigger", "add", "queue", "orders", "--function", "consume",
		"--subject", "orders.created", "--max-deliver", "2"}, &out, &errOut); rc != 0 {
		t.Fatalf("mkctl trigger add queue: %d %s", rc, errOut.String())
	}
	nc, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	dead := make(chan *nats.Msg, 4)
	sub, err := nc.ChanSubscribe("deadletter.orders.created", dead)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		if _, err := js.Publish(context.Background(), "orders.created", []byte(fmt.Sprintf("m%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.Publish(context.Background(), "orders.created", []byte("bad-1")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-dead:
		if string(m.Data) != "bad-1" || m.Header.Get("Minik8s-Attempts") != "2" || m.Header.Get("Minik8s-Error") == "" {
			t.Errorf("dead letter: %q %v", m.Data, m.Header)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no dead letter within 60s")
	}
	waitUntil(t, 60*time.Second, "every message's call ended", func() bool {
		list, _, err := s.Client.FuncInstances("default").List(context.Background(), client.ListOptions{})
		if err != nil {
			return false
		}
		ok, failed := map[string]int{}, 0
		for _, inst := range list {
			if inst.Spec.Trigger == nil || inst.Spec.Trigger.Name != "orders" {
				continue
			}
			switch inst.Status.Phase {
			case "Succeeded":
				ok[string(inst.Spec.Arg)]++
			case "Failed":
				failed++
			default:
				return false
			}
		}
		for arg, c := range ok {
			if c != 1 {
				t.Fatalf("message %s called %d times", arg, c)
			}
		}
		if len(ok) == n && failed != 2 {
			t.Fatalf("%d failed calls of the bad message, want 2 (max-deliver)", failed)
		}
		return len(ok) == n
	})

	// Removing a trigger removes its consumer, and the stream once no
	// trigger reads its subject; what a trigger removed while no runner
	// ran left is swept too, and streams that are not minik8s's stay.
	bg := context.Background()
	if rc := mkctl.Run(bg, []string{"--server", s.URL, "trigger", "add", "queue", "audit", "--function", "consume",
		"--subject", "orders.created"}, &out, &errOut); rc != 0 {
		t.Fatalf("mkctl trigger add queue audit: %d %s", rc, errOut.String())
	}
	orders, err := s.Client.Triggers("default").Get(bg, "orders")
	if err != nil {
		t.Fatal(err)
	}
	audit, err := s.Client.Triggers("default").Get(bg, "audit")
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []jetstream.StreamConfig{{Name: "MINIK8S_ORPHAN", Subjects: []string{"gone.subject"}}, {Name: "USER", Subjects: []string{"user.subject"}}} {
		st, err := js.CreateStream(bg, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateConsumer(bg, jetstream.ConsumerConfig{Durable: "trigger-0f0f0f0f-gone", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	consumers := func(stream string) (names []string) {
		st, err := js.Stream(bg, stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		l := st.ConsumerNames(bg)
		for c := range l.Name() {
			names = append(names, c)
		}
		return names
	}
	stream := orders.Status.Message[len("stream "):strings.Index(orders.Status.Message, ",")]
	waitUntil(t, 30*time.Second, "the audit trigger consumed", func() bool {
		return slices.Contains(consumers(stream), "trigger-"+audit.UID)
	})
	if rc := mkctl.Run(bg, []string{"--server", s.URL, "trigger", "rm", "orders"}, &out, &errOut); rc != 0 {
		t.Fatalf("mkctl trigger rm orders: %d %s", rc, errOut.String())
	}
	waitUntil(t, 30*time.Second, "the consumer of the removed trigger and the orphan stream deleted", func() bool {
		_, orphan := js.Stream(bg, "MINIK8S_ORPHAN")
		got := consumers(stream)
		return errors.Is(orphan, jetstream.ErrStreamNotFound) && slices.Equal(got, []string{"trigger-" + audit.UID})
	})
	if rc := mkctl.Run(bg, []string{"--server", s.URL, "trigger", "rm", "audit"}, &out, &errOut); rc != 0 {
		t.Fatalf("mkctl trigger rm audit: %d %s", rc, errOut.String())
	}
	waitUntil(t, 30*time.Second, "the stream no trigger reads deleted", func() bool {
		_, err := js.Stream(bg, stream)
		return errors.Is(err, jetstream.ErrStreamNotFound)
	})
	if got := consumers("USER"); !slices.Equal(got, []string{"trigger-0f0f0f0f-gone"}) {
		t.Errorf("a stream that is not minik8s's lost its consumers: %v", got)
	}
}

// startNATS runs an embedded NATS server with JetStream for the test.
func startNATS(t *testing.T) *queue.Server {
	t.Helper()
	srv, err := queue.Start("127.0.0.1", 0, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// jetStream connects to a NATS server for the test.
func jetStream(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}
