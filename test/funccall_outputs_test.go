package test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"minik8s/apiserver"
	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// TestFuncOutputs: minik8s.send(NAME, data) in a call sends through the
// function's outputs (seed 000's output bindings) as it is called, and
// returns once delivered: to a function (an asynchronous call, a child of
// the sending one), a NATS subject and a URL (through the egress guard, as
// callbacks); each delivery is recorded on the step. A send that cannot be
// delivered raises in the function, saying why, as one to an output the
// function does not have does; what a run sent before it raised stays sent.
func TestFuncOutputs(t *testing.T) {
	srv := startNATS(t)
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) { c.EgressAllowCIDRs = callbackAllow })
	framework.StartFuncRunnerWith(t, s, func(c *funcrunner.Config) { c.EgressAllow = callbackAllow; c.NATSURL = srv.URL })
	hook := newCallbackReceiver(t)
	nc, err := nats.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msgs := make(chan *nats.Msg, 4)
	if _, err := nc.ChanSubscribe("orders.out", msgs); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	sender := `
import minik8s

def run(arg):
    minik8s.send("audit", "audit:" + arg)
    minik8s.send("bus", {"order": arg})
    minik8s.send("hook", b"\xff" + arg.encode())
    if arg == "raise":
        raise ValueError("after sending")
    return "sent " + arg
`
	outputs := []map[string]any{{"name": "audit", "function": "auditor"}, {"name": "bus", "subject": "orders.out"},
		{"name": "hook", "url": hook.URL + "/orders"}}
	auditor := "def run(arg):\n    return 'audited ' + arg\n"
	badsend := "import minik8s\n\ndef run(arg):\n    minik8s.send('nope', arg)\n    return arg\n"
	funcTemplate(t, s, "sender", sender, "RETURN", "RETURN", map[string]any{"outputs": outputs})
	funcTemplate(t, s, "auditor", auditor, "RETURN", "RETURN", nil)
	funcTemplate(t, s, "badsend", badsend, "RETURN", "RETURN", nil)
	for name, code := range map[string]string{"sender": sender, "auditor": auditor, "badsend": badsend} {
		s.PublishFunctionPods(t, name, runtime(t, code))
	}

	code, v, data := syncCall(t, s, "sender", []byte("o1"))
	if code != http.StatusOK || v.Status != api.InstanceSucceeded || string(v.Result) != "sent o1" {
		t.Fatalf("sender: %d %s", code, data)
	}
	sends := v.Steps[0].Sends
	if len(sends) != 3 {
		t.Fatalf("the step recorded sends %+v, want 3", sends)
	}
	for _, sn := range sends {
		if sn.Error != "" {
			t.Errorf("send %s: %s", sn.Output, sn.Error)
		}
	}
	child := sends[0].Instance
	if sends[0].Output != "audit" || child == "" || sends[1].Bytes != len(`{"order": "o1"}`) {
		t.Fatalf("sends %+v", sends)
	}
	if cv := result(t, s, child, 30*time.Second); cv.Status != api.InstanceSucceeded || string(cv.Result) != "audited audit:o1" {
		t.Errorf("the child call: %+v", cv)
	}
	inst, err := s.Client.FuncInstances("default").Get(t.Context(), child)
	if err != nil {
		t.Fatal(err)
	}
	if p := inst.Spec.Parent; p == nil || p.Instance != v.InstanceID || p.Step != 1 || p.Output != "audit" {
		t.Errorf("the child's spec.parent %+v, want step 1 of %s through audit", p, v.InstanceID)
	}
	select {
	case m := <-msgs:
		if string(m.Data) != `{"order": "o1"}` {
			t.Errorf("NATS message %q", m.Data)
		}
	case <-time.After(10 * time.Second):
		t.Error("nothing published on orders.out")
	}
	posts := hook.delivered(t)
	if len(posts) != 1 || posts[0].body != "\xffo1" || posts[0].header.Get("X-Function-Output") != "hook" ||
		posts[0].header.Get("X-Call-Id") != v.InstanceID {
		t.Errorf("POSTs to the hook: %+v", posts)
	}

	logs := mustMkctl(t, s, "func", "logs", v.InstanceID)
	for _, want := range []string{"Sent:", "audit (8 bytes): call " + child, "bus (15 bytes): delivered", "hook (3 bytes): delivered"} {
		if !strings.Contains(logs, want) {
			t.Errorf("mkctl func logs does not show %q:\n%s", want, logs)
		}
	}
	if out := mustMkctl(t, s, "describe", "func", "sender"); !strings.Contains(out, "bus:") || !strings.Contains(out, "subject orders.out") {
		t.Errorf("describe func sender does not show its outputs:\n%s", out)
	}
	t.Run("a subject a stream keeps: stored, acknowledged", func(t *testing.T) {
		_, js := jetStream(t, srv.URL)
		st, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "KEPT", Subjects: []string{"orders.kept"}})
		if err != nil {
			t.Fatal(err)
		}
		keeper := "import minik8s\n\ndef run(arg):\n    minik8s.send('kept', arg)\n    return arg\n"
		src := filepath.Join(t.TempDir(), "keeper.py")
		if err := os.WriteFile(src, []byte(keeper), 0o644); err != nil {
			t.Fatal(err)
		}
		mustMkctl(t, s, "func", "create", "keeper", "-f", src, "--output", "kept=subject:orders.kept", "--output", "gone=url:http://127.0.0.2/x")
		mustMkctl(t, s, "func", "update", "keeper", "--output", "gone-")
		s.PublishFunctionPods(t, "keeper", runtime(t, keeper))
		_, v, data := syncCall(t, s, "keeper", []byte("k1"))
		if v.Status != api.InstanceSucceeded || len(v.Steps[0].Sends) != 1 || v.Steps[0].Sends[0].Error != "" {
			t.Fatalf("keeper: %s", data)
		}
		m, err := st.GetLastMsgForSubject(t.Context(), "orders.kept")
		if err != nil || string(m.Data) != "k1" {
			t.Errorf("the stream holds %v (%v), want k1", m, err)
		}
	})
	t.Run("a URL the egress guard refuses gets nothing, and the send raises", func(t *testing.T) {
		// The apiserver itself, on loopback outside what the operator opened.
		probe := "import minik8s\n\ndef run(arg):\n    try:\n        minik8s.send('in', arg)\n    except minik8s.OutputError as e:\n        return 'raised: ' + str(e)\n    return 'sent'\n"
		funcTemplate(t, s, "prober", probe, "RETURN", "RETURN", map[string]any{"outputs": []map[string]any{{"name": "in", "url": s.URL + "/api/v1/namespaces"}}})
		s.PublishFunctionPods(t, "prober", runtime(t, probe))
		_, v, data := syncCall(t, s, "prober", []byte("x"))
		const refused = "the platform sends no caller's request there"
		if v.Status != api.InstanceSucceeded || len(v.Steps[0].Sends) != 1 || !strings.Contains(v.Steps[0].Sends[0].Error, refused) ||
			!strings.HasPrefix(string(v.Result), "raised: sending to 'in': ") || !strings.Contains(string(v.Result), refused) {
			t.Errorf("a send to the apiserver: %s, want it refused by the egress guard, and the send to raise saying so", data)
		}
	})
	t.Run("a send to an output the function does not have raises", func(t *testing.T) {
		_, v, data := syncCall(t, s, "badsend", []byte("x"))
		if v.Status != api.InstanceFailed || !strings.Contains(v.Error, "OutputError") || !strings.Contains(v.Error, "no output 'nope'") {
			t.Errorf("badsend: %s", data)
		}
	})
	t.Run("what a run sent before it raised stays sent", func(t *testing.T) {
		_, v, data := syncCall(t, s, "sender", []byte("raise"))
		if v.Status != api.InstanceFailed || len(v.Steps) != 1 || len(v.Steps[0].Sends) != 3 || !strings.Contains(v.Error, "after sending") {
			t.Errorf("sender raising: %s", data)
		}
		select {
		case m := <-msgs:
			if string(m.Data) != `{"order": "raise"}` {
				t.Errorf("published %q", m.Data)
			}
		case <-time.After(10 * time.Second):
			t.Error("nothing published for the run that raised after sending")
		}
	})
}
