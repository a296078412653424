package test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

// TestE2EPluginsOnContainerd: a function created with mkctl, with the
// tracing plugin and a user plugin shipped beside it, runs on a real node:
// the plugins run in the declared order around every call, share state,
// a failing pre plugin fails the call naming it, and the run in the pod
// is a span under its step's.
func TestE2EPluginsOnContainerd(t *testing.T) {
	t.Parallel()
	s := cluster(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code := write("shout.py", "import os\ndef run(arg):\n    if arg == 'refuse':\n        return 'never'\n    print('running with', os.environ.get('TRACEPARENT', '')[:3])\n    return arg.upper()\n")
	plugin := write("gate.py", `NAME = "gate"
def pre(ctx):
    if ctx.arg == "refuse":
        raise PermissionError("not " + ctx.arg)
    ctx.set("ticket", "t-" + ctx.arg)
    print("gate pre, trace", bool(ctx.plugin("tracing").get("trace_id")))
def post(ctx):
    print("gate post", ctx.plugin("gate").get("ticket"), ctx.result)
    if ctx.result == "BOOM":
        raise RuntimeError("post " + ctx.result)
`)
	mustMkctl(t, s, "func", "create", "shout", "-f", code, "--file", plugin,
		"--plugin-pre", "tracing,log-context,gate", "--plugin-post", "gate,tracing")
	r := runMkctl(t, s, "", "func", "invoke", "shout", "-d", "hi", "--wait=3m", "--log")
	if r.code != 0 || strings.TrimSpace(r.out) != "HI" {
		t.Fatalf("invoke: %d %q %q", r.code, r.out, r.err)
	}
	if !strings.Contains(r.err, "gate pre, trace True\n") || !strings.Contains(r.err, "running with 00-\n") ||
		!strings.Contains(r.err, "gate post t-hi HI\n") ||
		strings.Index(r.err, "gate pre") > strings.Index(r.err, "running with") || strings.Index(r.err, "running with") > strings.Index(r.err, "gate post") {
		t.Errorf("the plugins' and the function's output, in order:\n%s", r.err)
	}
	// A failing post plugin leaves the call's outcome, and says so where
	// the call's logs are read.
	r = runMkctl(t, s, "", "func", "invoke", "shout", "-d", "boom", "--wait=1m", "--log")
	if r.code != 0 || strings.TrimSpace(r.out) != "BOOM" || !strings.Contains(r.err, "Plugin errors (post):\n    gate: RuntimeError: post BOOM\n") {
		t.Errorf("a failing post plugin, in the call's logs: %d %q %q", r.code, r.out, r.err)
	}
	r = runMkctl(t, s, "", "func", "invoke", "shout", "-d", "refuse", "--wait=1m")
	if r.code == 0 || !strings.Contains(r.err, "pre plugin gate failed: PermissionError: not refuse") {
		t.Errorf("a failing pre plugin: %d %q %q", r.code, r.out, r.err)
	}
	list, _, err := s.Client.FuncInstances("default").List(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range list {
		if inst.Spec.Arg != "hi" {
			continue
		}
		var step, run *api.FuncSpan
		for i, sp := range inst.Status.Trace {
			switch {
			case strings.HasPrefix(sp.Name, "step 1"):
				step = &inst.Status.Trace[i]
			case sp.Name == "run shout":
				run = &inst.Status.Trace[i]
			}
		}
		if step == nil || run == nil || run.ParentSpanID != step.SpanID || run.Service != "pod" {
			t.Errorf("trace of the call: %+v", inst.Status.Trace)
		}
	}
}
