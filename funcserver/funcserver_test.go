package funcserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// waitFor bounds every wait of these tests; it is generous because the
// machine is shared and runs them with -race.
const waitFor = 60 * time.Second

func TestMain(m *testing.M) {
	log.SetLevel(log.WarnLevel)
	os.Exit(m.Run())
}

type testServer struct {
	t      *testing.T
	url    string
	dir    string
	cancel context.CancelFunc
	done   chan error
}

// python finds the interpreter the tests run; they need a real one.
func python(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to test funcserver: %v", err)
	}
	return p
}

// copyFixture copies testdata/name into a fresh directory: functions and
// preRun scripts write files into their code dir in these tests.
func copyFixture(t testing.TB, name string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("testdata", name)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// start runs a funcserver on 127.0.0.1 for the fixture; it is stopped when
// the test ends.
func start(t *testing.T, fixture string, configure func(*Config)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := copyFixture(t, fixture)
	cfg := Config{CodeDir: dir, Listener: ln, Workers: 2, Python: python(t), PodName: "test-pod"}
	if configure != nil {
		configure(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{t: t, url: "http://" + ln.Addr().String(), dir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitFor):
			t.Errorf("Run did not return within %s of its context's end", waitFor)
		}
	})
	return s
}

// startReady starts the fixture and waits until it is ready.
func startReady(t *testing.T, fixture string, configure func(*Config)) *testServer {
	t.Helper()
	s := start(t, fixture, configure)
	r := s.waitStatus(func(r Readiness) bool { return r.Ready || r.Status == statusFailed })
	if !r.Ready {
		t.Fatalf("fixture %s not ready: %+v", fixture, r)
	}
	return s
}

func (s *testServer) readiness() (int, Readiness) {
	s.t.Helper()
	resp, err := http.Get(s.url + PathReady)
	if err != nil {
		s.t.Fatalf("GET %s: %v", PathReady, err)
	}
	defer resp.Body.Close()
	var r Readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		s.t.Fatalf("decode readiness: %v", err)
	}
	return resp.StatusCode, r
}

// waitStatus polls /readyz until done says so.
func (s *testServer) waitStatus(done func(Readiness) bool) Readiness {
	s.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		code, r := s.readiness()
		if (code == http.StatusOK) != r.Ready {
			s.t.Fatalf("readyz answered %d with %+v", code, r)
		}
		if done(r) {
			return r
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("readiness still %+v after %s", r, waitFor)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *testServer) stats() Stats {
	s.t.Helper()
	resp, err := http.Get(s.url + PathStats)
	if err != nil {
		s.t.Fatalf("GET %s: %v", PathStats, err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		s.t.Fatalf("decode stats: %v", err)
	}
	return st
}

// waitStats polls /stats until done says so.
func (s *testServer) waitStats(what string, done func(Stats) bool) Stats {
	s.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		st := s.stats()
		if done(st) {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("stats never showed %s: %+v", what, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// post sends one call and decodes the answer. It may run in any goroutine.
func (s *testServer) post(path, arg string, header map[string]string) (int, Response, error) {
	req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(arg))
	if err != nil {
		return 0, Response{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: waitFor}).Do(req)
	if err != nil {
		return 0, Response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, Response{}, err
	}
	var r Response
	if err := json.Unmarshal(body, &r); err != nil {
		return resp.StatusCode, r, errors.New("decode " + string(body) + ": " + err.Error())
	}
	return resp.StatusCode, r, nil
}

// invoke sends one call that must be answered with 200.
func (s *testServer) invoke(arg string, header map[string]string) Response {
	s.t.Helper()
	code, r, err := s.post(PathInvoke, arg, header)
	if err != nil {
		s.t.Fatalf("invoke %q: %v", arg, err)
	}
	if code != http.StatusOK {
		s.t.Fatalf("invoke %q: status %d, answer %+v", arg, code, r)
	}
	if r.Pod != "test-pod" {
		s.t.Errorf("invoke %q: pod %q, want test-pod", arg, r.Pod)
	}
	return r
}

// on is s reporting to t: a subtest's failures must stop the subtest's own
// goroutine, never the parent's (FailNow on a parent from a subtest panics).
func (s *testServer) on(t *testing.T) *testServer {
	c := *s
	c.t = t
	return &c
}

// invokeOK sends one call that must succeed and returns its result.
func (s *testServer) invokeOK(arg string) string {
	s.t.Helper()
	r := s.invoke(arg, nil)
	if r.Error != nil {
		s.t.Fatalf("invoke %q failed: %+v", arg, *r.Error)
	}
	return string(r.Result)
}

func ptr[T any](v T) *T { return &v }

func TestResults(t *testing.T) {
	plain := startReady(t, "plain", nil)
	check := startReady(t, "check", nil)
	types := startReady(t, "types", nil)
	for _, tc := range []struct {
		name        string
		s           *testServer
		arg         string
		result      string
		check       *bool
		hasCheck    bool
		viaRootPath bool
	}{
		{name: "plain", s: plain, arg: "world", result: "hello world"},
		{name: "root path", s: plain, arg: "root", result: "hello root", viaRootPath: true},
		{name: "empty arg", s: plain, arg: "", result: "hello "},
		{name: "utf-8 and json characters arg", s: plain, arg: "h\u00e9 \"q\" <a&b>\n\\", result: "hello h\u00e9 \"q\" <a&b>\n\\"},
		{name: "check true", s: check, arg: "yes", result: `{"answer": "yes"}`, check: ptr(true), hasCheck: true},
		{name: "check false", s: check, arg: "no", result: `{"answer": "no"}`, check: ptr(false), hasCheck: true},
		{name: "str as is", s: types, arg: "str", result: "plain"},
		{name: "None is empty", s: types, arg: "none", result: ""},
		{name: "int as json", s: types, arg: "int", result: "42"},
		{name: "float as json", s: types, arg: "float", result: "1.5"},
		{name: "bool as json", s: types, arg: "bool", result: "true"},
		{name: "list as json", s: types, arg: "list", result: `[1, "two", null]`},
		{name: "dict as json", s: types, arg: "dict", result: `{"a": 1, "b": [true]}`},
		{name: "set as str", s: types, arg: "set", result: "{7}"},
		{name: "decimal as str", s: types, arg: "decimal", result: "1.10"},
		{name: "unicode", s: types, arg: "unicode", result: "h\u00e9llo \u2713"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := PathInvoke
			if tc.viaRootPath {
				path = "/"
			}
			code, r, err := tc.s.post(path, tc.arg, nil)
			if err != nil || code != http.StatusOK {
				t.Fatalf("POST %s: %d %+v %v", path, code, r, err)
			}
			if r.Error != nil {
				t.Fatalf("error %+v", *r.Error)
			}
			if string(r.Result) != tc.result {
				t.Errorf("result %q, want %q", r.Result, tc.result)
			}
			if (r.Check == nil) != (tc.check == nil) || r.Check != nil && *r.Check != *tc.check {
				t.Errorf("check %v, want %v", r.Check, tc.check)
			}
			if r.HasCheck != tc.hasCheck {
				t.Errorf("hasCheck %v, want %v", r.HasCheck, tc.hasCheck)
			}
		})
	}
}

func TestCheckRaises(t *testing.T) {
	s := startReady(t, "check", nil)
	r := s.invoke("boom", nil)
	if r.Error == nil || r.Error.Type != "RuntimeError" || !strings.Contains(r.Error.Trace, "in check") {
		t.Fatalf("error %+v, want check's RuntimeError", r.Error)
	}
	// run succeeded: its result stays, check has no value.
	if r.Result != `{"answer": "boom"}` || r.Check != nil || !r.HasCheck {
		t.Errorf("answer %+v", r)
	}
}

func TestLargeArgument(t *testing.T) {
	s := startReady(t, "plain", nil)
	// Far beyond a pipe's buffer in both directions.
	arg := strings.Repeat("0123456789abcdef", 1<<16)
	if got := s.invokeOK(arg); got != "hello "+arg {
		t.Fatalf("result of %d bytes differs from the %d expected", len(got), len(arg)+6)
	}
}

func TestPrintsCapturedPerCall(t *testing.T) {
	s := startReady(t, "prints", nil)
	args := []string{"alpha", "beta"}
	answers := make([]Response, len(args))
	var wg sync.WaitGroup
	for i, arg := range args {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, r, err := s.post(PathInvoke, arg, nil)
			if err != nil || code != http.StatusOK {
				t.Errorf("invoke %s: %d %v", arg, code, err)
			}
			answers[i] = r
		}()
	}
	wg.Wait()
	for i, arg := range args {
		r := answers[i]
		if r.Error != nil {
			t.Fatalf("%s: %+v", arg, *r.Error)
		}
		want := arg + " first\n" + arg + " to stderr\n" + "INFO " + arg + " logged\n" + arg + " raw fd 1\n" + arg + " raw fd 2\n" +
			arg + " from a subprocess\n" + arg + " from a shell\n" + arg + " second\n"
		if r.Output != want {
			t.Errorf("%s: output %q, want %q", arg, r.Output, want)
		}
	}
}

func TestFunctionErrors(t *testing.T) {
	s := startReady(t, "errors", func(c *Config) { c.Workers = 1 })

	r := s.invoke("raise-me", nil)
	if r.Error == nil {
		t.Fatalf("no error: %+v", r)
	}
	if r.Error.Type != "ValueError" || r.Error.Message != "bad raise-me" {
		t.Errorf("error %+v, want ValueError: bad raise-me", *r.Error)
	}
	for _, want := range []string{"Traceback", "function.py", "in run", "in helper", "ValueError: bad raise-me"} {
		if !strings.Contains(r.Error.Trace, want) {
			t.Errorf("trace lacks %q:\n%s", want, r.Error.Trace)
		}
	}
	if strings.Contains(r.Error.Trace, "worker.py") {
		t.Errorf("trace shows the worker's own frames:\n%s", r.Error.Trace)
	}
	if r.Output != "before raise-me\n" {
		t.Errorf("output %q: prints before the exception belong to the answer", r.Output)
	}
	if r.Result != "" || r.Check != nil {
		t.Errorf("failed call has result %q check %v", r.Result, r.Check)
	}

	// sys.exit is an exception of the call, not the worker's end.
	r = s.invoke("sysexit", nil)
	if r.Error == nil || r.Error.Type != "SystemExit" {
		t.Fatalf("sys.exit answered %+v", r)
	}
	if got := s.invokeOK("after"); got != "ok after" {
		t.Fatalf("after: %q", got)
	}
	st := s.stats()
	if st.WorkerStarts != 1 || st.Calls != 3 || st.Errors != 2 {
		t.Errorf("stats %+v: want 1 worker start, 3 calls, 2 errors", st)
	}
}

func TestWorkerDeath(t *testing.T) {
	s := startReady(t, "errors", func(c *Config) { c.Workers = 1 })
	for i, tc := range []struct{ arg, message string }{
		{"exit", "exit status 3"},
		{"segv", "segmentation fault"},
	} {
		r := s.invoke(tc.arg, nil)
		if r.Error == nil || r.Error.Type != ErrorWorkerExited || !strings.Contains(r.Error.Message, tc.message) {
			t.Fatalf("%s answered %+v, want a %s error saying %q", tc.arg, r.Error, ErrorWorkerExited, tc.message)
		}
		// The only worker died: this call waits for its replacement.
		if got := s.invokeOK("next"); got != "ok next" {
			t.Fatalf("after %s: %q", tc.arg, got)
		}
		st := s.stats()
		if st.WorkerStarts != int64(i+2) || st.WorkerExits != int64(i+1) || st.LiveWorkers != 1 {
			t.Errorf("after %s stats %+v", tc.arg, st)
		}
	}
}

func TestWorkerDeathWhileIdle(t *testing.T) {
	s := startReady(t, "errors", func(c *Config) { c.Workers = 1 })
	pid, err := strconv.Atoi(s.invokeOK("exit-later"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitFor)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("worker %d never exited", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The dead worker is noticed when taken from the pool, not by the call.
	next := s.invokeOK("pid")
	if next == strconv.Itoa(pid) {
		t.Fatalf("call answered by the dead worker %d", pid)
	}
	if st := s.stats(); st.WorkerStarts != 2 || st.Errors != 0 {
		t.Errorf("stats %+v: want 2 worker starts, no error", st)
	}
}

func TestOutputCapped(t *testing.T) {
	s := startReady(t, "errors", func(c *Config) { c.Workers = 1 })
	r := s.invoke("chatty", nil)
	if r.Error != nil || r.Result != "ok chatty" {
		t.Fatalf("answered %+v", r.Error)
	}
	if !strings.HasPrefix(r.Output, "before chatty\n"+strings.Repeat("x", 1000)) ||
		!strings.HasSuffix(r.Output, function.OutputNote(2097167)) || r.OutputDropped != 2097167 {
		t.Fatalf("output of %d characters not cut as expected: ...%q", len(r.Output), r.Output[max(0, len(r.Output)-80):])
	}
}

func TestReplacementFailing(t *testing.T) {
	s := startReady(t, "reimport", func(c *Config) { c.Workers = 1 })
	r := s.invoke("exit", nil)
	if r.Error == nil || r.Error.Type != ErrorWorkerExited {
		t.Fatalf("exit answered %+v", r)
	}
	// The only worker is gone and its replacement cannot import.
	ready := s.waitStatus(func(r Readiness) bool { return r.Status == statusRestarting })
	if ready.Ready || !strings.Contains(ready.Reason, "second import refused") {
		t.Fatalf("readiness %+v", ready)
	}
	// Once the import works again, a retry brings the pod back.
	if err := os.Remove(filepath.Join(s.dir, "imported")); err != nil {
		t.Fatal(err)
	}
	s.waitStatus(func(r Readiness) bool { return r.Ready })
	if got := s.invokeOK("again"); got != "ok again" {
		t.Fatalf("result %q", got)
	}
}

// A call grows the pool while its only worker is busy; that worker dies,
// and then the extra one fails to import: the pool, left with none, goes
// on trying, and the call is served once an import works again.
func TestGrowFailsAsLastWorkerDies(t *testing.T) {
	s := startReady(t, "slowfail", func(c *Config) {
		c.Workers = 2
		c.Timeout = 20 * time.Second
	})
	dying := make(chan Response, 1)
	go func() { _, r, _ := s.post(PathInvoke, "exit-soon", nil); dying <- r }()
	s.waitStats("the first call in flight", func(st Stats) bool { return st.InFlight == 1 })
	answered := make(chan Response, 1)
	go func() { _, r, _ := s.post(PathInvoke, "b", nil); answered <- r }()
	if r := <-dying; r.Error == nil || r.Error.Type != ErrorWorkerExited {
		t.Fatalf("exit-soon answered %+v", r)
	}
	// The extra worker's import fails (it waits 0.5 s, then refuses).
	time.Sleep(time.Second)
	if err := os.Remove(filepath.Join(s.dir, "imported")); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-answered:
		if r.Error != nil || r.Result != "ok b" {
			t.Fatalf("the waiting call answered %+v", r)
		}
	case <-time.After(waitFor):
		t.Fatal("the waiting call was never served: no worker left, none being started")
	}
}

func TestTimeout(t *testing.T) {
	s := startReady(t, "errors", func(c *Config) {
		c.Workers = 1
		c.Timeout = time.Second
	})
	// Calls that must not time out say so: the server's 1s timeout also
	// bounds waiting for a worker, which a loaded machine can exceed.
	generous := map[string]string{HeaderTimeout: "60"}
	r := s.invoke("pid", generous)
	if r.Error != nil {
		t.Fatalf("the first call failed: %+v", *r.Error)
	}
	pid := r.Result

	for _, tc := range []struct {
		name    string
		header  map[string]string
		timeout time.Duration
	}{
		{"configured timeout", nil, time.Second},
		{"header timeout", map[string]string{HeaderTimeout: "0.5"}, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := s.on(t)
			r := s.invoke("sleep", tc.header)
			if r.Error == nil || r.Error.Type != ErrorTimeout {
				t.Fatalf("sleep answered %+v, want a Timeout", r)
			}
			// The message names the timeout that applied (how long the call
			// ran is a figure, not something to assert).
			if !strings.Contains(r.Error.Message, tc.timeout.String()) {
				t.Errorf("message %q does not name the timeout %s", r.Error.Message, tc.timeout)
			}
			// The worker was killed; a fresh fork serves the next call. Its
			// generous timeout covers waiting for the import on a busy machine.
			r = s.invoke("pid", generous)
			if r.Error != nil {
				t.Fatalf("the call after the timeout failed: %+v", *r.Error)
			}
			next := r.Result
			if next == pid {
				t.Errorf("the call after the timeout ran in the killed worker %s", pid)
			}
			pid = next
		})
	}
	st := s.stats()
	if st.Timeouts != 2 || st.WorkerStarts != 3 {
		t.Errorf("stats %+v: want 2 timeouts, 3 worker starts", st)
	}
}

func TestQueueTimeout(t *testing.T) {
	s := startReady(t, "errors", func(c *Config) { c.Workers = 1 })
	first := make(chan Response, 1)
	go func() {
		_, r, err := s.post(PathInvoke, "wait", nil)
		if err != nil {
			t.Errorf("wait: %v", err)
		}
		first <- r
	}()
	waitFile(t, filepath.Join(s.dir, "waiting"))

	// The only worker is busy: this call times out in the queue.
	r := s.invoke("queued", map[string]string{HeaderTimeout: "0.2"})
	if r.Error == nil || r.Error.Type != ErrorTimeout || !strings.Contains(r.Error.Message, "no worker became free") {
		t.Fatalf("queued call answered %+v", r)
	}
	if r.QueueMs < 200 {
		t.Errorf("queued %d ms, less than its timeout", r.QueueMs)
	}

	touch(t, filepath.Join(s.dir, "release"))
	if r := <-first; r.Error != nil || r.Result != "ok wait" {
		t.Fatalf("the running call answered %+v", r)
	}
	// No worker was killed for the queued call's timeout.
	if st := s.stats(); st.WorkerStarts != 1 {
		t.Errorf("stats %+v: want 1 worker start", st)
	}
}

// TestIdleWorkerLastInFirstOut: calls one after another all go to the
// worker that served last, whose caches are warm, not round the pool.
func TestIdleWorkerLastInFirstOut(t *testing.T) {
	s := startReady(t, "imports", func(c *Config) { c.Workers = 4 })
	seen := map[string]int{}
	for i := 0; i < 12; i++ {
		code, r, err := s.post(PathInvoke, strconv.Itoa(i), nil)
		if err != nil || code != http.StatusOK || r.Error != nil {
			t.Fatalf("call %d: %d %+v %v", i, code, r, err)
		}
		seen[string(r.Result)]++
	}
	if len(seen) != 1 {
		t.Errorf("12 calls in a row ran in %d workers (%v), want 1", len(seen), seen)
	}
}

// Under load the pool grows to its size, its workers forked from the one
// process that imported the function, and calls run only in those forks.
func TestImportOnceForkWorkers(t *testing.T) {
	const workers, calls = 3, 60
	s := startReady(t, "imports", func(c *Config) { c.Workers = workers })
	if st := s.stats(); st.LiveWorkers != 1 || st.WorkerStarts != 1 {
		t.Fatalf("an idle pod's workers: %+v, want 1", st)
	}
	answers := make(chan string, calls)
	var wg sync.WaitGroup
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, r, err := s.post(PathInvoke, strconv.Itoa(i), nil)
			if err != nil || code != http.StatusOK || r.Error != nil {
				t.Errorf("call %d: %d %+v %v", i, code, r, err)
			}
			answers <- string(r.Result)
		}()
	}
	wg.Wait()
	close(answers)
	// The workers started for the burst may be forked after it ended.
	deadline := time.Now().Add(waitFor)
	for s.stats().LiveWorkers < workers {
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not grow to %d under %d concurrent calls: %+v", workers, calls, s.stats())
		}
		time.Sleep(10 * time.Millisecond)
	}

	data, err := os.ReadFile(filepath.Join(s.dir, "imports.log"))
	if err != nil {
		t.Fatal(err)
	}
	imported := strings.Fields(string(data))
	if len(imported) != 1 {
		t.Fatalf("function.py imported %d times, want once (by the zygote): %q", len(imported), data)
	}
	servers := map[string]bool{}
	for a := range answers {
		pid, parent, _ := strings.Cut(a, " ")
		if parent != imported[0] || pid == imported[0] {
			t.Errorf("a call ran in process %s, child of %s: want a fork of %s", pid, parent, imported[0])
		}
		servers[pid] = true
	}
	if len(servers) > workers {
		t.Errorf("calls ran in %d processes, more than the %d workers", len(servers), workers)
	}
	if st := s.stats(); st.Calls != calls || st.WorkerStarts != workers {
		t.Errorf("stats %+v", st)
	}
}

func writeWorkerScripts(t *testing.T) string {
	t.Helper()
	script, err := writeScripts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// Concurrent calls that each hold a worker grow the pool to its size, and
// the workers idle for long are stopped down to one.
func TestPoolGrowsAndTrims(t *testing.T) {
	dir := copyFixture(t, "imports")
	p := newPool(workerSpec{python: python(t), script: writeWorkerScripts(t), codeDir: dir}, 3)
	if err := p.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.close()
	live := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.live
	}
	if n := live(); n != 1 {
		t.Fatalf("%d live workers at start, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	var held []*worker
	for range 3 {
		w, err := p.acquire(ctx)
		if err != nil {
			t.Fatalf("acquire with %d held: %v", len(held), err)
		}
		held = append(held, w)
	}
	if n := live(); n != 3 {
		t.Fatalf("%d live workers with 3 held, want 3", n)
	}
	// A fourth waits: the pool is at its size.
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	if w, err := p.acquire(short); err == nil {
		t.Fatalf("a fourth worker %d beyond the size of 3", w.pid)
	}
	for _, w := range held {
		p.release(w)
	}
	if p.trimOne(time.Now().Add(-time.Hour)) {
		t.Fatal("trimmed a worker idle for less than the cutoff")
	}
	for p.trimOne(time.Now().Add(time.Hour)) {
	}
	if n := live(); n != 1 {
		t.Fatalf("%d live workers after trimming, want 1", n)
	}
	w, err := p.acquire(ctx)
	if err != nil {
		t.Fatalf("acquire after trimming: %v", err)
	}
	p.release(w)
}

func TestPreRunSideEffects(t *testing.T) {
	s := startReady(t, "prerunstate", nil)
	if got := s.invokeOK("x"); got != "prepared by preRun.sh" {
		t.Fatalf("result %q: the function does not see what preRun wrote", got)
	}
}

func TestNeverReady(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		reasons []string
	}{
		{"norun", []string{"defines no run(arg)"}},
		{"syntax", []string{"SyntaxError", "function.py", "line 1"}},
		{"importfail", []string{"ModuleNotFoundError", "this_module_does_not_exist_anywhere", "Traceback"}},
		{"prerunfail", []string{"preRun.sh failed with exit code 7", "installing things", "boom: no such package"}},
		{"nofunc", []string{"no function to serve", "function.py"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			s := start(t, tc.fixture, nil)
			r := s.waitStatus(func(r Readiness) bool { return r.Ready || r.Status == statusFailed })
			if r.Ready {
				t.Fatal("ready")
			}
			for _, want := range tc.reasons {
				if !strings.Contains(r.Reason, want) {
					t.Errorf("reason lacks %q: %q", want, r.Reason)
				}
			}
			code, resp, err := s.post(PathInvoke, "x", nil)
			if err != nil || code != http.StatusServiceUnavailable || resp.Error == nil || resp.Error.Type != ErrorUnavailable {
				t.Errorf("invoke while failed: %d %+v %v", code, resp, err)
			}
			if health, err := http.Get(s.url + PathHealth); err != nil || health.StatusCode != http.StatusOK {
				t.Errorf("healthz: %v %v", health, err)
			} else {
				health.Body.Close()
			}
			if _, err := os.Stat(filepath.Join(s.dir, "imported")); err == nil {
				t.Error("function.py was imported although preRun failed")
			}
		})
	}
}

// With ExitOnFailure, as in a pod, a function that cannot start ends Run
// with a StartError naming the cause, and a good one serves on.
func TestExitOnFailure(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		reasons []string
	}{
		{"syntax", []string{"import function.py: SyntaxError", "line 1"}},
		{"norun", []string{"defines no run(arg)"}},
		{"prerunfail", []string{"preRun.sh failed with exit code 7", "boom: no such package"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{CodeDir: copyFixture(t, tc.fixture), Listener: ln, Workers: 2, Python: python(t), ExitOnFailure: true}
			done := make(chan error, 1)
			go func() { done <- Run(context.Background(), cfg) }()
			select {
			case err := <-done:
				var se *StartError
				if !errors.As(err, &se) {
					t.Fatalf("Run = %v, want a StartError", err)
				}
				for _, want := range tc.reasons {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error lacks %q: %q", want, err)
					}
				}
			case <-time.After(waitFor):
				t.Fatalf("Run did not return within %s of a failed start", waitFor)
			}
		})
	}
	s := startReady(t, "errors", func(c *Config) { c.ExitOnFailure = true })
	if got := s.invokeOK("ok"); got == "" {
		t.Fatal("no answer from a function that started")
	}

	// Stopped while its preRun runs: the signal is no failure of the code.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := copyFixture(t, "prerunfail")
	started := filepath.Join(t.TempDir(), "started")
	if err := os.WriteFile(filepath.Join(dir, "preRun.sh"), []byte("touch "+started+"\nsleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{CodeDir: dir, Listener: ln, Workers: 1, Python: python(t), ExitOnFailure: true}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	for deadline := time.Now().Add(waitFor); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("preRun did not start")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run stopped during preRun = %v, want nil", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Run did not return after its stop")
	}
}

// async def run and check are awaited; a worker whose function is not
// async never imports asyncio (it costs an idle worker some 8 MB).
func TestAsyncFunction(t *testing.T) {
	s := startReady(t, "async", nil)
	r := s.invoke("apple", nil)
	if r.Error != nil || r.Result != "APPLE" || r.Check == nil || !*r.Check {
		t.Fatalf("async run and check: %+v", r)
	}

	plain := startReady(t, "plain", func(c *Config) {
		if err := os.WriteFile(filepath.Join(c.CodeDir, "function.py"),
			[]byte("import sys\n\ndef run(arg):\n    return str('asyncio' in sys.modules)\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if got := plain.invokeOK("x"); got != "False" {
		t.Errorf("asyncio imported in a worker of a plain function: %s", got)
	}
}

func TestDrain(t *testing.T) {
	s := startReady(t, "errors", nil)
	inFlight := make(chan Response, 1)
	go func() {
		code, r, err := s.post(PathInvoke, "wait", nil)
		if err != nil || code != http.StatusOK {
			t.Errorf("in-flight call: %d %v", code, err)
		}
		inFlight <- r
	}()
	waitFile(t, filepath.Join(s.dir, "waiting"))

	s.cancel() // what SIGTERM does in cmd/funcserver
	r := s.waitStatus(func(r Readiness) bool { return r.Status == statusDraining })
	if r.Ready {
		t.Fatal("ready while draining")
	}
	code, resp, err := s.post(PathInvoke, "new", nil)
	if err != nil || code != http.StatusServiceUnavailable || resp.Error == nil || resp.Error.Type != ErrorUnavailable {
		t.Fatalf("new call while draining: %d %+v %v", code, resp, err)
	}
	select {
	case err := <-s.done:
		t.Fatalf("Run returned (%v) with a call in flight", err)
	default:
	}

	touch(t, filepath.Join(s.dir, "release"))
	if r := <-inFlight; r.Error != nil || r.Result != "ok wait" {
		t.Fatalf("in-flight call answered %+v", r)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		s.done <- nil // for the cleanup
	case <-time.After(waitFor):
		t.Fatal("Run did not return after the last call")
	}
}

func TestBadRequests(t *testing.T) {
	s := startReady(t, "plain", func(c *Config) { c.MaxBodyBytes = 16 })
	for _, tc := range []struct {
		name   string
		arg    string
		header map[string]string
		code   int
		typ    string
		names  string
	}{
		{"timeout not a number", "x", map[string]string{HeaderTimeout: "soon"}, http.StatusBadRequest, ErrorBadRequest, HeaderTimeout},
		{"timeout zero", "x", map[string]string{HeaderTimeout: "0"}, http.StatusBadRequest, ErrorBadRequest, HeaderTimeout},
		{"timeout negative", "x", map[string]string{HeaderTimeout: "-3"}, http.StatusBadRequest, ErrorBadRequest, HeaderTimeout},
		{"body too large", strings.Repeat("x", 17), nil, http.StatusRequestEntityTooLarge, ErrorTooLarge, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, r, err := s.post(PathInvoke, tc.arg, tc.header)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || r.Error == nil || r.Error.Type != tc.typ || !strings.Contains(r.Error.Message, tc.names) {
				t.Fatalf("answered %d %+v, want %d %s naming %s", code, r.Error, tc.code, tc.typ, tc.names)
			}
		})
	}
	resp, err := http.Get(s.url + PathInvoke)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s: %d, want 405", PathInvoke, resp.StatusCode)
	}
	if st := s.stats(); st.Rejected != 4 || st.Calls != 0 {
		t.Errorf("stats %+v: want 4 rejected, 0 calls", st)
	}
}

func TestMetrics(t *testing.T) {
	s := startReady(t, "plain", nil)
	s.invokeOK("x")
	resp, err := http.Get(s.url + PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"funcserver_calls_total 1\n", "funcserver_workers_live 1\n", "funcserver_ready 1\n"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Workers: -1}, "workers"},
		{Config{Timeout: -time.Second}, "timeout"},
		{Config{Port: 70000}, "port"},
	} {
		err := Run(context.Background(), tc.cfg)
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != tc.field {
			t.Errorf("Run(%+v) = %v, want Invalid naming %s", tc.cfg, err, tc.field)
		}
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEventAndContext: a run(event, context) gets the argument as data
// (JSON-decoded unless its content type is text), the event metadata and
// the context from the headers, the memory limit filled in; check still
// gets the result string.
func TestEventAndContext(t *testing.T) {
	s := startReady(t, "event", nil)
	meta := `{"specversion":"1.0","id":"e-1","source":"/s","type":"t","topic":"orders","headers":{"X-A":"\u00e9"}}`
	ctxJSON := `{"function-name":"f","namespace":"default","runtime":"r","timeout":7,"memory-limit":"","instance-id":"i-1","trigger":"queue/q","config":{"k":"v"}}`
	for _, tc := range []struct {
		name, arg, meta string
		wantData        any
		wantCheck       bool
	}{
		{"json data", `{"n":1}`, meta, map[string]any{"n": float64(1)}, true},
		{"text data", `right`, meta, "right", false},
		{"text content type keeps JSON-looking text", `"q"`, `{"id":"e-2","datacontenttype":"text/plain"}`, `"q"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.invoke(tc.arg, map[string]string{"X-Func-Event": tc.meta, "X-Func-Context": ctxJSON})
			if resp.Error != nil {
				t.Fatalf("error %+v", resp.Error)
			}
			var got struct {
				Data     any            `json:"data"`
				Metadata map[string]any `json:"metadata"`
				Context  map[string]any `json:"context"`
			}
			if err := json.Unmarshal([]byte(resp.Result), &got); err != nil {
				t.Fatalf("result %q: %v", resp.Result, err)
			}
			if !reflect.DeepEqual(got.Data, tc.wantData) {
				t.Errorf("data %#v, want %#v", got.Data, tc.wantData)
			}
			var wantMeta map[string]any
			_ = json.Unmarshal([]byte(tc.meta), &wantMeta)
			wantMeta["body"] = tc.arg // the raw input, as seed 002 names it
			if ct, ok := wantMeta["datacontenttype"]; ok {
				wantMeta["content-type"] = ct
			}
			if !reflect.DeepEqual(got.Metadata, wantMeta) {
				t.Errorf("metadata %v, want %v", got.Metadata, wantMeta)
			}
			c := got.Context
			if c["function-name"] != "f" || c["instance-id"] != "i-1" || c["trigger"] != "queue/q" || c["timeout"] != float64(7) ||
				c["config"].(map[string]any)["k"] != "v" {
				t.Errorf("context %v", c)
			}
			if _, ok := c["memory-limit"].(string); !ok {
				t.Errorf("context memory-limit %v", c["memory-limit"])
			}
			if resp.Check == nil || *resp.Check != tc.wantCheck {
				t.Errorf("check %v, want %v", resp.Check, tc.wantCheck)
			}
		})
	}
	// Without the headers (a caller of the old contract), the event and
	// context still come, empty but well-formed.
	resp := s.invoke(`[1]`, nil)
	if resp.Error != nil || !strings.Contains(string(resp.Result), `"data": [1]`) || !strings.Contains(string(resp.Result), `"config": {}`) {
		t.Errorf("without headers: %+v", resp)
	}
	if code, resp, _ := s.post("/invoke", "x", map[string]string{"X-Func-Event": "[not json"}); code != http.StatusBadRequest || resp.Error == nil {
		t.Errorf("a broken event header: %d %+v", code, resp)
	}
}

// TestPlugins: pre plugins run in order before the function, post plugins
// after it; plugins share state through get; log-context names the
// instance and step on log records; tracing gives the run a span under
// the step's and the function its TRACEPARENT; a failing pre plugin fails
// the call naming it, a failing post plugin is recorded.
func TestPlugins(t *testing.T) {
	t.Setenv("FUNC_PLUGINS_PRE", "tracing,log-context,audit,metrics")
	t.Setenv("FUNC_PLUGINS_POST", "audit,metrics,tracing")
	s := startReady(t, "plugins", nil)
	ctxJSON := `{"function-name":"f","instance-id":"i-7","step":2,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","config":{}}`
	call := func(arg string) Response {
		return s.invoke(arg, map[string]string{"X-Func-Context": ctxJSON})
	}
	r := call("hello")
	if r.Error != nil {
		t.Fatalf("error %+v", r.Error)
	}
	if !strings.HasPrefix(string(r.Result), "hello traceparent=00-0af7651916cd43dd8448eb211c80319c-") {
		t.Errorf("result %q: the function did not see its trace context", r.Result)
	}
	if own, sub, _ := strings.Cut(strings.TrimPrefix(string(r.Result), "hello traceparent="), " sub="); own != sub {
		t.Errorf("result %q: a subprocess saw another trace context than the function", r.Result)
	}
	want := "audit pre i-7 2\nINFO [i-7 step 2] running hello\naudit post pre saw trace 0af7651916cd43dd8448eb211c80319c result " + r.Result + " error False\n"
	if r.Output != string(want) {
		t.Errorf("output %q\nwant   %q", r.Output, want)
	}
	var spans []api.FuncSpan
	if err := json.Unmarshal(r.Spans, &spans); err != nil {
		t.Fatalf("spans %s: %v", r.Spans, err)
	}
	var run *api.FuncSpan
	for i, sp := range spans {
		if sp.TraceID != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("span %+v is not in the call's trace", sp)
		}
		if sp.Name == "run f" {
			run = &spans[i]
		}
	}
	if run == nil || run.ParentSpanID != "b7ad6b7169203331" || run.EndNs < run.StartNs {
		t.Fatalf("run span %+v in %+v", run, spans)
	}
	plugins, named := 0, map[string]bool{}
	for _, sp := range spans {
		if strings.HasPrefix(sp.Name, "plugin ") && sp.ParentSpanID == run.SpanID {
			plugins++
			named[sp.Name] = true
		}
	}
	if plugins < 5 || !named["plugin audit@2 pre"] || !named["plugin log-context@1 pre"] {
		t.Errorf("%d plugin spans under the run's, each named with its version: %+v", plugins, spans)
	}

	r = call("fail-pre")
	if r.Error == nil || r.Error.Type != "PluginError" || !strings.Contains(r.Error.Message, "pre plugin audit failed: RuntimeError: audit refuses fail-pre") ||
		strings.Contains(r.Output, "running") {
		t.Errorf("a failing pre plugin: %+v output %q", r.Error, r.Output)
	}
	r = call("fail-post")
	if r.Error != nil || len(r.PluginErrors) != 1 || r.PluginErrors[0] != "audit: RuntimeError: audit post fails" {
		t.Errorf("a failing post plugin: %+v %v", r.Error, r.PluginErrors)
	}
	r = call("boom")
	if r.Error == nil || r.Error.Type != "ValueError" || !strings.Contains(r.Output, "error True") {
		t.Errorf("post plugins see the function's error: %+v %q", r.Error, r.Output)
	}
	resp, err := http.Get(s.url + PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	code, body := resp.StatusCode, string(data)
	if code != http.StatusOK || !strings.Contains(body, `funcserver_run_seconds_count{function="",outcome="ok"} 2`) ||
		!strings.Contains(body, `funcserver_run_seconds_count{function="",outcome="error"} 1`) {
		t.Errorf("metrics after the calls: %d\n%s", code, body)
	}
}

// With tracing in pre only, as the README has it, the run still has its
// span, and every plugin's span is under a span of the trace.
func TestTracingInPreOnly(t *testing.T) {
	t.Setenv("FUNC_PLUGINS_PRE", "tracing,log-context,audit")
	t.Setenv("FUNC_PLUGINS_POST", "audit")
	s := startReady(t, "plugins", nil)
	r := s.invoke("hello", map[string]string{"X-Func-Context": `{"function-name":"f","instance-id":"i-8","step":1,` +
		`"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","config":{}}`})
	if r.Error != nil {
		t.Fatalf("error %+v", r.Error)
	}
	var spans []api.FuncSpan
	if err := json.Unmarshal(r.Spans, &spans); err != nil {
		t.Fatalf("spans %s: %v", r.Spans, err)
	}
	ids := map[string]bool{"b7ad6b7169203331": true} // the step's span, the run's parent
	var run *api.FuncSpan
	for i, sp := range spans {
		ids[sp.SpanID] = true
		if sp.Name == "run f" {
			run = &spans[i]
		}
	}
	if run == nil || run.ParentSpanID != "b7ad6b7169203331" {
		t.Fatalf("no run span under the step's: %+v", spans)
	}
	for _, sp := range spans {
		if !ids[sp.ParentSpanID] || sp.EndNs > run.EndNs {
			t.Errorf("span %+v: its parent is in no span of the trace, or it ends after the run's", sp)
		}
	}
}

// A function whose import starts a thread its calls need works as it did
// before zygotes: a fork would lose the thread, so each worker imports the
// function itself (its pid is in the import log).
func TestImportStartingThreads(t *testing.T) {
	s := startReady(t, "threads", func(c *Config) { c.Workers = 2 })
	if got := s.invokeOK("a"); got != "thread a" {
		t.Fatalf("result %q", got)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, "imports.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(data))); n != 2 {
		t.Fatalf("function.py imported %d times, want twice (by the zygote and by the worker): %q", n, data)
	}
}

// The pod's memory limit, as the downward API gives it, is what a call
// reads as context["memory-limit"].
func TestMemoryLimitFromThePod(t *testing.T) {
	t.Setenv(function.EnvMemoryLimit, "67108864")
	if got := memoryLimit(); got != "67108864" {
		t.Errorf("memoryLimit() = %q, want the pod's 67108864", got)
	}
}

// The built-in plugins' versions the runtime puts in traces are those
// describe shows (function.BuiltinPluginVersions).
func TestBuiltinPluginVersions(t *testing.T) {
	out, err := exec.Command("python3", "-c", "import json, minik8s_plugins as m; print(json.dumps({k: v.version for k, v in m.BUILTIN.items()}))").Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, function.BuiltinPluginVersions) {
		t.Errorf("minik8s_plugins.py's versions %v, function.BuiltinPluginVersions %v", got, function.BuiltinPluginVersions)
	}
}
