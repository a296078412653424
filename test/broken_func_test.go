package test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/test/framework"
)

// checkBrokenFunctionsFailFast: code that cannot start fails its calls at once, naming the cause, on
// real containerd with pods on their own network: a syntax error (with its
// line), no run, a preRun that exits 3, an image that cannot be pulled.
// Without this each call waited out the 2-minute cold start timeout for
// a pod that never became ready. The Func's Ready condition, `mkctl
// describe func` and an Event say it too.
//
// It runs in TestE2EFunctionsOnContainerd's cluster.
func checkBrokenFunctionsFailFast(t *testing.T, s *framework.APIServer) {
	// At one pod at least, so that its failure stays to be seen.
	funcTemplate(t, s, "syntaxerr", "def run(arg)\n    return arg\n", "RETURN", "RETURN", map[string]any{"minInstanceNum": 1})
	funcTemplate(t, s, "norun", "def walk(arg):\n    return arg\n", "RETURN", "RETURN", nil)
	funcTemplate(t, s, "prerunfails", "def run(arg):\n    return arg\n", "RETURN", "RETURN",
		map[string]any{"preRun": b64("echo fetching the model\nexit 3\n")})
	// A registry on a loopback port nobody listens on: the pull fails
	// without any traffic leaving the machine.
	body := `{"apiVersion":"v2","kind":"Func","metadata":{"name":"nopull"},"spec":{"name":"nopull","image":"127.0.0.1:1/minik8s/missing:1","left":"RETURN","right":"RETURN","maxInstanceNum":1}}`
	if code, data := httpDo(t, "POST", s.URL+"/api/funcs/template", "application/json", []byte(body)); code != http.StatusCreated {
		t.Fatalf("create nopull: %d %s", code, data)
	}
	cases := []struct{ fn, reason, cause string }{
		{"syntaxerr", "", "SyntaxError: expected ':' (function.py, line 1)"},
		{"norun", "", "function.py defines no run(arg)"},
		{"prerunfails", "", "preRun.sh failed with exit code 3; output ends with: fetching the model"},
		{"nopull", "ImagePull", "127.0.0.1:1/minik8s/missing:1"},
	}
	var wg sync.WaitGroup
	for _, tc := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			v, err := trySyncInvoke(s, tc.fn, "x", 60*time.Second)
			took := time.Since(start)
			if err != nil {
				t.Errorf("%s: %v", tc.fn, err)
				return
			}
			if v.Status != api.InstanceFailed || !strings.Contains(v.Error, "cannot start: ") || !strings.Contains(v.Error, tc.reason) ||
				!strings.Contains(v.Error, tc.cause) {
				t.Errorf("%s: %s %q, want it failed naming %q", tc.fn, v.Status, v.Error, tc.cause)
			}
			t.Logf("%s: failed after %s: %s", tc.fn, took.Round(time.Millisecond), strings.SplitN(v.Error, "\n", 2)[0])
		}()
	}
	wg.Wait()

	// The status says why, and so does describe. While the failing pod
	// restarts, Ready is Unknown a moment (a restart may yet serve): read
	// until it says False again (CI run of 2026-12-06 read it restarting).
	var f *api.Func
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var err error
		if f, err = s.Client.Funcs("default").Get(context.Background(), "syntaxerr"); err != nil {
			t.Fatal(err)
		}
		c := f.Status.Conditions
		failed := len(c) == 1 && c[0].Type == api.FuncReady && c[0].Status == api.ConditionFalse &&
			c[0].ObservedGeneration == f.Generation && strings.Contains(c[0].Message, "SyntaxError")
		if failed {
			out = mustMkctl(t, s, "describe", "func", "syntaxerr")
			if strings.Contains(out, "Ready") && strings.Contains(out, "False") && strings.Contains(out, "SyntaxError: expected ':'") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("syntaxerr's conditions: %+v; describe:\n%s", c, out)
		}
	}
	// Events are written apart from the status, and retried while the
	// apiserver is busy: waited for.
	var evs []*api.Event
	var err error
	found := false
	for deadline := time.Now().Add(30 * time.Second); !found && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if evs, _, err = s.Client.Events("default").List(context.Background(), client.ListOptions{FieldSelector: "involvedObject.name=syntaxerr"}); err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			found = found || (e.Reason == "FailedStart" && strings.Contains(e.Message, "SyntaxError"))
		}
	}
	if !found {
		t.Errorf("no FailedStart event for syntaxerr among %d events", len(evs))
	}

	// Fixed, the function serves: the old failure no longer counts.
	for {
		f.Spec.Function = b64("def run(arg):\n    return arg + ' fixed'\n")
		_, err := s.Client.Funcs("default").Update(context.Background(), f)
		if err == nil {
			break
		}
		// The controller writes the status meanwhile.
		if !errdefs.IsConflict(err) {
			t.Fatal(err)
		}
		if f, err = s.Client.Funcs("default").Get(context.Background(), "syntaxerr"); err != nil {
			t.Fatal(err)
		}
	}
	if v := syncInvoke(t, s, "syntaxerr", "now"); v.Status != api.InstanceSucceeded || v.Result != "now fixed" {
		t.Fatalf("after the fix: %+v", v)
	}
}
