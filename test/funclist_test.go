package test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// TestFuncListAndInvokeAnything: GET /api/funcs and mkctl func ls list
// every function with its triggers; mkctl func invoke calls a function a
// schedule alone reaches, once, with an event of a schedule's kind; the
// payload read from stdin is kept per user and --again sends it again;
// --log prints what the call printed.
func TestFuncListAndInvokeAnything(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	s := framework.StartAPIServer(t)
	framework.StartLocalFuncRunner(t, s)
	greet := "def run(arg):\n    print('greeting', arg)\n    return 'hi ' + arg\n"
	funcTemplate(t, s, "greet", greet, "RETURN", "RETURN", nil)
	publish(t, s, "greet", runtime(t, greet))
	funcTemplate(t, s, "nightly", metaCode, "RETURN", "RETURN", nil)
	publish(t, s, "nightly", runtime(t, metaCode))
	funcTemplate(t, s, "idle", greet, "RETURN", "RETURN", nil)
	for _, body := range []string{
		`{"metadata":{"name":"greet-web"},"spec":{"function":"greet","http":{"path":"/greet","methods":["POST"]}}}`,
		`{"metadata":{"name":"nightly-run"},"spec":{"function":"nightly","schedule":{"cron":"0 0 1 1 *"}}}`,
	} {
		if code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/triggers", "application/json", []byte(body)); code != http.StatusCreated {
			t.Fatalf("create trigger: %d %s", code, data)
		}
	}

	code, data := httpDo(t, "GET", s.URL+"/api/funcs", "", nil)
	var list api.FuncSummaryList
	if code != http.StatusOK || json.Unmarshal(data, &list) != nil || len(list.Items) != 3 {
		t.Fatalf("GET /api/funcs: %d %s", code, data)
	}
	byName := map[string]api.FuncSummary{}
	for _, f := range list.Items {
		byName[f.Name] = f
	}
	if g := byName["greet"]; g.Version != "v2" || len(g.Triggers) != 1 || g.Triggers[0].Type != "http" || g.Triggers[0].Source != "POST /greet" ||
		g.ReadyPods != 1 || !strings.Contains(g.Runtime, "python-runtime") {
		t.Errorf("greet in the list: %+v", g)
	}
	if n := byName["nightly"]; len(n.Triggers) != 1 || n.Triggers[0].Type != "schedule" || n.Triggers[0].Source != "0 0 1 1 *" {
		t.Errorf("nightly in the list: %+v", n)
	}
	if i := byName["idle"]; len(i.Triggers) != 0 || i.ReadyPods != 0 {
		t.Errorf("idle in the list: %+v", i)
	}
	ls := mustMkctl(t, s, "func", "ls")
	for _, want := range []string{"NAME", "TRIGGERS", "greet", "http:POST /greet", "nightly", "schedule:0 0 1 1 *", "idle", "api"} {
		if !strings.Contains(ls, want) {
			t.Errorf("mkctl func ls lacks %q:\n%s", want, ls)
		}
	}
	if js := mustMkctl(t, s, "func", "ls", "-o", "json"); !strings.Contains(js, `"readyPods": 1`) {
		t.Errorf("mkctl func ls -o json:\n%s", js)
	}
	// -A lists every namespace's, with their namespace, as kubectl -A does.
	funcTemplateNS(t, s, "kube-system", "sysfn")
	all := mustMkctl(t, s, "func", "ls", "-A")
	if !regexp.MustCompile(`(?m)^NAMESPACE +NAME `).MatchString(all) || !regexp.MustCompile(`(?m)^default +greet `).MatchString(all) ||
		!regexp.MustCompile(`(?m)^kube-system +sysfn `).MatchString(all) {
		t.Errorf("mkctl func ls -A:\n%s", all)
	}
	if strings.Contains(mustMkctl(t, s, "func", "ls"), "sysfn") {
		t.Errorf("mkctl func ls lists another namespace's function")
	}
	if code, data := httpDo(t, "GET", s.URL+"/api/funcs?allNamespaces=true&namespace=default", "", nil); code != http.StatusBadRequest ||
		!strings.Contains(string(data), "cannot be combined") {
		t.Errorf("allNamespaces with a namespace: %d %s", code, data)
	}

	// A schedule-only function, invoked by hand: once, with a schedule's event.
	r := runMkctl(t, s, "", "func", "invoke", "nightly", "--wait")
	if r.code != 0 || !strings.Contains(r.err, `as its schedule trigger "nightly-run"`) {
		t.Fatalf("mkctl func invoke nightly: %d\n%s\n%s", r.code, r.out, r.err)
	}
	c := readCalled(t, strings.TrimSpace(r.out))
	if c.Metadata.Type != "io.minik8s.trigger.schedule" || c.Metadata.Source != "/api/v1/namespaces/default/triggers/nightly-run" || c.Data == "" {
		t.Errorf("the schedule-only function was called with %+v", c)
	}
	nightlyRuns := func() int {
		insts, _, err := s.Client.FuncInstances("default").List(context.Background(), client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		for _, inst := range insts {
			if inst.Spec.Function == "nightly" {
				runs++
			}
		}
		return runs
	}
	// The record of a synchronous call is stored right after the answer.
	waitUntil(t, 10*time.Second, "the call's record", func() bool { return nightlyRuns() > 0 })
	time.Sleep(500 * time.Millisecond)
	if runs := nightlyRuns(); runs != 1 {
		t.Errorf("nightly ran %d times, want once", runs)
	}

	// The payload from stdin is kept; --again sends it; --log shows the output.
	if r := runMkctl(t, s, "from stdin", "func", "invoke", "greet", "--wait"); r.code != 0 || strings.TrimSpace(r.out) != "hi from stdin" {
		t.Fatalf("mkctl func invoke greet < stdin: %d %q %q", r.code, r.out, r.err)
	}
	r = runMkctl(t, s, "", "func", "invoke", "greet", "--again", "--log")
	if r.code != 0 || strings.TrimSpace(r.out) != "hi from stdin" || !strings.Contains(r.err, "greeting from stdin") {
		t.Errorf("mkctl func invoke greet --again --log: %d %q %q", r.code, r.out, r.err)
	}
	if r := runMkctl(t, s, "", "func", "invoke", "idle", "--again"); r.code == 0 || !strings.Contains(r.err, "no previous payload") {
		t.Errorf("--again of a function never invoked: %d %q %q", r.code, r.out, r.err)
	}
}

// TestCallLogsIsolated: two concurrent calls in one pod, each printing,
// logging, writing to fd 2 and running echo in a subprocess, each get
// exactly their own lines: in the step's output, in the X-Minik8s-Log
// answer header asked for, and with mkctl func logs.
func TestCallLogsIsolated(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartLocalFuncRunner(t, s)
	code := `import logging, os, subprocess, sys, time
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
def run(arg):
    print(arg, "printed")
    time.sleep(0.3)
    logging.info("%s logged", arg)
    os.write(2, (arg + " on fd 2\n").encode())
    subprocess.run(["echo", arg, "echoed"], check=True)
    time.sleep(0.3)
    return arg
`
	funcTemplate(t, s, "chatty", code, "RETURN", "RETURN", nil)
	publish(t, s, "chatty", runtime(t, code))
	args := []string{"alpha", "beta"}
	logs := make([]string, len(args))
	ids := make([]string, len(args))
	done := make(chan struct{}, len(args))
	for i, arg := range args {
		go func() {
			defer func() { done <- struct{}{} }()
			req, _ := http.NewRequest("POST", s.URL+"/api/funcs/chatty?wait=30s", strings.NewReader(arg))
			req.Header.Set("X-Minik8s-Log", "1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var v api.FuncInstanceView
			_ = json.NewDecoder(resp.Body).Decode(&v)
			ids[i] = v.InstanceID
			b, err := base64.StdEncoding.DecodeString(resp.Header.Get("X-Minik8s-Log"))
			if err != nil {
				t.Errorf("log header of %s: %v", arg, err)
			}
			logs[i] = string(b)
		}()
	}
	for range args {
		<-done
	}
	for i, arg := range args {
		want := arg + " printed\nINFO " + arg + " logged\n" + arg + " on fd 2\n" + arg + " echoed\n"
		if logs[i] != want {
			t.Errorf("logs of %s: %q, want %q", arg, logs[i], want)
		}
		out := mustMkctl(t, s, "func", "logs", ids[i])
		if !strings.Contains(out, "    "+arg+" echoed") || strings.Contains(out, args[1-i]) {
			t.Errorf("mkctl func logs of %s:\n%s", arg, out)
		}
	}
}
