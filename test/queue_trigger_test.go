package test

import (
	"bytes"
	"context"
	"fmt"
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
				ok[inst.Spec.Arg]++
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
