package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"minik8s/mkctl"
	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitingLine matches the single line the waiting indicator writes when
// stderr is not a terminal.
var waitingLine = regexp.MustCompile(`^(waiting for|storing the result of) .* \d+s\.\.\.$`)

// stderrLines splits stderr into lines and checks that all but the last
// want (none, if last is "") are waiting lines: a call that takes more
// than a second shows the indicator, one that does not, prints nothing.
func stderrLines(t *testing.T, r mkctlResult, last string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(r.err, "\n"), "\n")
	if r.err == "" {
		lines = nil
	}
	if last != "" {
		if len(lines) == 0 || lines[len(lines)-1] != last {
			t.Errorf("stderr %q does not end with %q", r.err, last)
			return
		}
		lines = lines[:len(lines)-1]
	}
	if len(lines) > 1 || (len(lines) == 1 && !waitingLine.MatchString(lines[0])) {
		t.Errorf("stderr has more than one waiting line: %q", r.err)
	}
}

func TestMkctlFuncCreateInvokeResultLogs(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	ctx := context.Background()
	dir := t.TempDir()
	greet := "def run(arg):\n    print('greeting', arg)\n    return 'hello ' + arg\n"
	greetFile := writeFile(t, dir, "greet.py", greet)
	setup := writeFile(t, dir, "setup.sh", "echo ready\n")

	t.Run("create", func(t *testing.T) {
		out := mustMkctl(t, s, "func", "create", "greet", "-f", greetFile, "--pre-run", setup, "--max", "4", "--timeout", "10")
		if out != "func/greet created\n" {
			t.Errorf("create printed %q", out)
		}
		f, err := s.Client.Funcs("default").Get(ctx, "greet")
		if err != nil {
			t.Fatal(err)
		}
		code, _ := base64.StdEncoding.DecodeString(f.Spec.Function)
		pre, _ := base64.StdEncoding.DecodeString(f.Spec.PreRun)
		if string(code) != greet || string(pre) != "echo ready\n" || f.APIVersion != "v2" || f.Spec.Name != "greet" ||
			*f.Spec.MaxInstanceNum != 4 || *f.Spec.TimeoutSeconds != 10 || f.Spec.MinInstanceNum != nil || f.Spec.Left != "" {
			t.Errorf("stored %s %+v (code %q, preRun %q)", f.APIVersion, f.Spec, code, pre)
		}
		r := runMkctl(t, s, "", "func", "create", "greet", "-f", greetFile)
		if r.code != 1 || r.out != "" || r.err != `error: func "greet" already exists in namespace "default": `+
			"change it with 'mkctl func update greet ...' or 'mkctl apply -f FILE'\n" {
			t.Errorf("second create: %+v", r)
		}
		r = runMkctl(t, s, "", "func", "create", "Bad/Name", "-f", greetFile)
		if r.code != 1 || !strings.HasPrefix(r.err, "Error from server (Invalid): ") || strings.Count(r.err, "\n") != 1 {
			t.Errorf("invalid name: %+v", r)
		}
	})
	publish(t, s, "greet", runtime(t, greet))

	t.Run("invoke --wait prints the result", func(t *testing.T) {
		r := runMkctl(t, s, "", "func", "invoke", "greet", "-d", "world", "--wait")
		if r.code != 0 || r.out != "hello world\n" {
			t.Errorf("invoke --wait: %+v", r)
		}
		stderrLines(t, r, "")
		argFile := writeFile(t, dir, "arg.txt", "from a file")
		r = runMkctl(t, s, "", "func", "invoke", "greet", "--data-file", argFile, "--wait=30s")
		if r.code != 0 || r.out != "hello from a file\n" {
			t.Errorf("invoke --data-file: %+v", r)
		}
		r = runMkctl(t, s, "piped", "func", "invoke", "greet", "-d", "@-", "--wait")
		if r.code != 0 || r.out != "hello piped\n" {
			t.Errorf("invoke -d @-: %+v", r)
		}
		// /dev/null (cron's, nohup's, CI's stdin) is a character device but
		// no terminal: it is the payload, empty, and no editor opens.
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		t.Setenv("EDITOR", "false")
		var out, errOut bytes.Buffer
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if code := mkctl.RunWithInput(wctx, []string{"--server", s.URL, "func", "invoke", "greet", "--wait"}, null, &out, &errOut); code != 0 || out.String() != "hello \n" {
			t.Errorf("invoke --wait </dev/null: exit %d, %q %q", code, out.String(), errOut.String())
		}
	})

	var id string
	t.Run("invoke without --wait prints the instance id", func(t *testing.T) {
		r := runMkctl(t, s, "", "func", "invoke", "greet", "-d", "there")
		id = strings.TrimSpace(r.out)
		if r.code != 0 || strings.Count(r.out, "\n") != 1 || r.err != "see the result with: mkctl func result "+id+"\n" {
			t.Fatalf("invoke: %+v", r)
		}
		if v := result(t, s, id, 30*time.Second); v.Result != "hello there" {
			t.Fatalf("instance %+v", v)
		}
	})

	t.Run("result", func(t *testing.T) {
		out := mustMkctl(t, s, "func", "result", id)
		want := "Instance:  " + id + "\nFunction:  greet\nStatus:    Succeeded\nChain:     greet\nResult:    hello there\n"
		if out != want {
			t.Errorf("result:\n%s\nwant:\n%s", out, want)
		}
		var v api.FuncInstanceView
		if err := json.Unmarshal([]byte(mustMkctl(t, s, "func", "result", id, "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if v.InstanceID != id || v.Status != api.InstanceSucceeded || v.Result != "hello there" || len(v.Steps) != 1 {
			t.Errorf("-o json: %+v", v)
		}
		var y api.FuncInstanceView
		if err := yaml.Unmarshal([]byte(mustMkctl(t, s, "func", "result", id, "-o", "yaml")), &y); err != nil || y.Result != "hello there" {
			t.Errorf("-o yaml: %+v %v", y, err)
		}
	})

	t.Run("logs", func(t *testing.T) {
		out := mustMkctl(t, s, "func", "logs", id)
		for _, w := range []string{"Instance " + id + " of greet: Succeeded\n", "\nStep 1: greet\n",
			"\n  Pod:       pod-", " on node-a\n", "\n  Duration:  ", "\n  Check:     <none> (no check: left)\n",
			"\n  Argument:  there\n", "\n  Result:    hello there\n", "\n  Output:\n    greeting there\n"} {
			if !strings.Contains(out, w) {
				t.Errorf("logs lack %q:\n%s", w, out)
			}
		}
	})

	t.Run("update changes only what is given", func(t *testing.T) {
		if out := mustMkctl(t, s, "func", "update", "greet", "--left", "RETURN", "--v1"); out != "func/greet updated\n" {
			t.Errorf("update printed %q", out)
		}
		f, err := s.Client.Funcs("default").Get(ctx, "greet")
		if err != nil {
			t.Fatal(err)
		}
		code, _ := base64.StdEncoding.DecodeString(f.Spec.Function)
		if f.APIVersion != "v1" || f.Spec.Left != "RETURN" || string(code) != greet || *f.Spec.MaxInstanceNum != 4 {
			t.Errorf("after update: %s %+v", f.APIVersion, f.Spec)
		}
		mustMkctl(t, s, "func", "update", "greet", "--v1=false")
		if f, err := s.Client.Funcs("default").Get(ctx, "greet"); err != nil || f.APIVersion != "v2" || f.Spec.Left != "RETURN" {
			t.Errorf("back to v2: %v %+v", err, f)
		}
		r := runMkctl(t, s, "", "func", "update", "nobody", "--max", "2")
		if r.code != 1 || r.err != "Error from server (NotFound): Func \"nobody\" not found in namespace \"default\"\n" {
			t.Errorf("update of a missing function: %+v", r)
		}
	})

	t.Run("a failing function exits 1 with its error", func(t *testing.T) {
		raises := "def run(arg):\n    print('about to divide')\n    return 1 / 0\n"
		mustMkctl(t, s, "func", "create", "raises", "-f", writeFile(t, dir, "raises.py", raises))
		publish(t, s, "raises", runtime(t, raises))
		r := runMkctl(t, s, "", "func", "invoke", "raises", "-d", "x", "--wait")
		m := regexp.MustCompile(`^Error: function "raises" failed: ZeroDivisionError: division by zero \(see 'mkctl func logs ([0-9a-f-]+)'\)$`).
			FindStringSubmatch(lastLine(r.err))
		if r.code != 1 || r.out != "" || m == nil {
			t.Fatalf("failing function: %+v", r)
		}
		stderrLines(t, r, lastLine(r.err))
		logs := mustMkctl(t, s, "func", "logs", m[1])
		for _, w := range []string{"Instance " + m[1] + " of raises: Failed\n", "\n  Output:\n    about to divide\n",
			"\n  Error:\n    ZeroDivisionError: division by zero\n    Traceback (most recent call last):\n", "    ZeroDivisionError"} {
			if !strings.Contains(logs, w) {
				t.Errorf("logs lack %q:\n%s", w, logs)
			}
		}
		if out := mustMkctl(t, s, "func", "result", m[1]); !strings.Contains(out, "Status:    Failed\n") ||
			!strings.Contains(out, `Error:     function "raises" failed: ZeroDivisionError: division by zero`) {
			t.Errorf("result of a failed call:\n%s", out)
		}
	})

	t.Run("unknown function, instance and server are one line", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"func", "invoke", "nobody", "-d", "x", "--wait"}, `Error from server (NotFound): function "nobody" not found in namespace "default"`},
			{[]string{"func", "invoke", "nobody"}, `Error from server (NotFound): function "nobody" not found in namespace "default"`},
			{[]string{"func", "result", "no-such-id"}, `Error from server (NotFound): function instance "no-such-id" not found (unknown, or expired: call records are kept for 1h0m0s)`},
			{[]string{"func", "logs", "no-such-id"}, `Error from server (NotFound): function instance "no-such-id" not found (unknown, or expired: call records are kept for 1h0m0s)`},
			{[]string{"func", "delete", "nobody"}, `Error from server (NotFound): Func "nobody" not found in namespace "default"`},
		} {
			r := runMkctl(t, s, "", tc.args...)
			if r.code != 1 || r.out != "" || r.err != tc.want+"\n" {
				t.Errorf("mkctl %v: %+v\nwant stderr %q", tc.args, r, tc.want)
			}
		}
		// Port 1 of loopback: nothing listens there.
		var out, errOut strings.Builder
		code := mkctl.RunWithInput(ctx, []string{"--server", "127.0.0.1:1", "func", "invoke", "greet", "--wait"}, strings.NewReader(""), &out, &errOut)
		if code != 1 || !strings.HasPrefix(errOut.String(), "error: cannot reach the apiserver at http://127.0.0.1:1 (set --server or MINIK8S_SERVER): ") ||
			strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("unreachable apiserver: %d %q", code, errOut.String())
		}
	})

	t.Run("--wait gives up after the duration", func(t *testing.T) {
		slow := "import time\ndef run(arg):\n    time.sleep(6)\n    return arg\n"
		mustMkctl(t, s, "func", "create", "slow", "-f", writeFile(t, dir, "slow.py", slow))
		publish(t, s, "slow", runtime(t, slow))
		r := runMkctl(t, s, "", "func", "invoke", "slow", "--wait=2s")
		m := regexp.MustCompile(`^error: function "slow" still Running after 2s: see its result later with 'mkctl func result [0-9a-f-]+'$`).
			MatchString(lastLine(r.err))
		if r.code != 1 || r.out != "" || !m {
			t.Errorf("timed out wait: %+v", r)
		}
		stderrLines(t, r, lastLine(r.err))
	})

	t.Run("delete", func(t *testing.T) {
		if out := mustMkctl(t, s, "func", "delete", "greet", "raises"); out != "func \"greet\" deleted\nfunc \"raises\" deleted\n" {
			t.Errorf("delete printed %q", out)
		}
		if r := runMkctl(t, s, "", "get", "func", "greet"); r.code != 1 {
			t.Errorf("greet still there: %+v", r)
		}
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestMkctlFuncColdStartIndicator calls a function that has no pod yet:
// mkctl says once (stderr is no terminal here) that it waits for a cold
// start, and prints the result when a pod comes.
func TestMkctlFuncColdStartIndicator(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	code := "def run(arg):\n    return arg[::-1]\n"
	mustMkctl(t, s, "func", "create", "cold", "-f", writeFile(t, t.TempDir(), "cold.py", code))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- mkctl.RunWithInput(ctx, []string{"--server", s.URL, "func", "invoke", "cold", "-d", "olleh", "--wait=90s"},
			strings.NewReader(""), &out, &errOut)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "\n") {
		if time.Now().After(deadline) {
			t.Fatalf("no waiting line; stderr %q", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !regexp.MustCompile(`^waiting for a pod of cold \(cold start\) \d+s\.\.\.\n$`).MatchString(errOut.String()) {
		t.Errorf("waiting line %q", errOut.String())
	}
	publish(t, s, "cold", runtime(t, code))
	select {
	case c := <-done:
		if c != 0 || out.String() != "hello\n" || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("exit %d, stdout %q, stderr %q", c, out.String(), errOut.String())
		}
	case <-ctx.Done():
		t.Fatalf("invoke did not end; stderr %q", errOut.String())
	}
}

// TestMkctlFuncDemoBranches applies yaml/func-demo.yaml and takes both
// branches of its chain.
func TestMkctlFuncDemoBranches(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	file := filepath.Join(examplesDir, "func-demo.yaml")
	expectLines(t, "apply", mustMkctl(t, s, "apply", "-f", file), []string{"func/classify created", "func/double created", "func/shout created"})
	docs, err := mkctl.ReadManifests([]string{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		f := d.Object.(*api.Func)
		code, err := base64.StdEncoding.DecodeString(f.Spec.Function)
		if err != nil {
			t.Fatal(err)
		}
		publish(t, s, f.Name, runtime(t, string(code)))
	}

	for _, tc := range []struct{ arg, want string }{
		{" 21 ", "42"}, {"021", "42"}, {"2.5", "5"}, {"0.25", "0.5"}, {"hello", "HELLO!"}, {" mixed Case ", "MIXED CASE!"},
	} {
		r := runMkctl(t, s, "", "func", "invoke", "classify", "-d", tc.arg, "--wait")
		if r.code != 0 || r.out != tc.want+"\n" {
			t.Errorf("classify %q: %+v, want %q", tc.arg, r, tc.want)
		}
		stderrLines(t, r, "")
	}

	for _, tc := range []struct {
		arg  string
		want []string
	}{
		{"21", []string{"Step 1: classify\n", "  Check:     true (left)\n", "  Output:\n    classifying '21'\n", "Step 2: double\n", "  Result:    42\n"}},
		{"hi", []string{"Step 1: classify\n", "  Check:     false (right)\n", "Step 2: shout\n", "  Result:    HI!\n"}},
	} {
		id := strings.TrimSpace(runMkctl(t, s, "", "func", "invoke", "classify", "-d", tc.arg).out)
		result(t, s, id, 30*time.Second)
		logs := mustMkctl(t, s, "func", "logs", id)
		for _, w := range tc.want {
			if !strings.Contains(logs, w) {
				t.Errorf("logs of classify %q lack %q:\n%s", tc.arg, w, logs)
			}
		}
		if strings.Contains(logs, "Step 3") {
			t.Errorf("a third step:\n%s", logs)
		}
	}
}

// TestMkctlGetFuncsPool checks COUNTER, REPLICAS and READY of get funcs,
// with pools made by hand (no controller runs here), and -w.
func TestMkctlGetFuncsPool(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	ctx := context.Background()
	dir := t.TempDir()
	code := "def run(arg):\n    return arg\n"
	src := writeFile(t, dir, "echo.py", code)
	mustMkctl(t, s, "func", "create", "pooled", "-f", src, "--max", "5")
	mustMkctl(t, s, "func", "create", "fresh", "-f", src, "--v1")
	mustMkctl(t, s, "func", "create", "lonely", "-f", src)

	pool := func(name string, replicas, current, ready int32) {
		t.Helper()
		f, err := s.Client.Funcs("default").Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		rsName := function.ObjectName(name)
		rss := s.Client.ReplicaSets("default")
		rs, err := rss.Get(ctx, rsName)
		if err != nil {
			rs, err = rss.Create(ctx, &api.ReplicaSet{
				ObjectMeta: api.ObjectMeta{Name: rsName, Labels: function.Selector(name)},
				Spec: api.ReplicaSetSpec{Replicas: &replicas, Selector: &api.LabelSelector{MatchLabels: function.Selector(name)},
					Template: function.PodTemplate(f)},
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		rs.Status = api.ReplicaSetStatus{Replicas: current, ReadyReplicas: ready}
		if _, err := rss.UpdateStatus(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	pool("pooled", 3, 2, 1)
	pool("fresh", 1, 1, 1) // a v1 function has no pool, whatever is there

	// The counter as the function controller (not running here) writes it.
	f, err := s.Client.Funcs("default").Get(ctx, "pooled")
	if err != nil {
		t.Fatal(err)
	}
	f.Status.Counter = 2
	if _, err := s.Client.Funcs("default").UpdateStatus(ctx, f); err != nil {
		t.Fatal(err)
	}
	header := []string{"NAME", "VERSION", "LEFT", "RIGHT", "MIN", "MAX", "COUNTER", "REPLICAS", "READY", "AGE"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rows := tableRows(t, mustMkctl(t, s, "get", "funcs"), header...)
		got := map[string]string{}
		for name, r := range rows {
			got[name] = strings.Join(r[1:9], " ")
		}
		want := map[string]string{
			"pooled": "v2 <none> <none> 0 5 2 3/2 1",
			"fresh":  "v1 <none> <none> 0 10 0 - -",
			"lonely": "v2 <none> <none> 0 10 0 - -",
		}
		if len(got) == 3 && got["pooled"] == want["pooled"] && got["fresh"] == want["fresh"] && got["lonely"] == want["lonely"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("get funcs rows %q\nwant %q", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	named := tableRows(t, mustMkctl(t, s, "get", "funcs", "pooled", "fresh"), header...)
	if strings.Join(named["pooled"][7:9], " ") != "3/2 1" || strings.Join(named["fresh"][7:9], " ") != "- -" {
		t.Errorf("named rows %q", named)
	}
	all := mustMkctl(t, s, "get", "funcs", "-A")
	if !regexp.MustCompile(`(?m)^default +pooled +v2 .* 3/2 +1 +\d+s$`).MatchString(all) {
		t.Errorf("get funcs -A:\n%s", all)
	}

	// -w: a change of the function prints a row with its pool as it is then.
	watchCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- mkctl.RunWithInput(watchCtx, []string{"--server", s.URL, "get", "funcs", "pooled", "-w"}, strings.NewReader(""), &out, &errOut)
	}()
	waitRow := func(what string, re *regexp.Regexp) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !re.MatchString(out.String()) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s; output so far:\n%s\nstderr:\n%s", what, out.String(), errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitRow("the listed row", regexp.MustCompile(`(?m)^pooled +v2 +<none> +<none> +0 +5 +2 +3/2 +1 +\d+s$`))
	pool("pooled", 3, 3, 3)
	mustMkctl(t, s, "func", "update", "pooled", "--max", "4")
	waitRow("the row after the update", regexp.MustCompile(`(?m)^pooled +v2 +<none> +<none> +0 +4 +2 +3/3 +3 +\d+s$`))
	cancel()
	if c := <-done; c != 0 || errOut.String() != "" {
		t.Errorf("watch ended with %d, stderr %q", c, errOut.String())
	}
}
