package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// runtimeWorkers is runtime with a chosen number of Python workers.
func runtimeWorkers(t *testing.T, code string, workers int) int32 {
	t.Helper()
	return framework.StartFuncServer(t, code, workers)
}

// stepCode is a chain step that logs "NAME CALL" to path as it starts
// (CALL: the argument up to its first "+"), sleeps, and appends "+NAME".
func stepCode(path, name string, sleep float64) string {
	return fmt.Sprintf(`
import fcntl, time
def run(arg):
    with open(%q, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(%q + " " + arg.split("+")[0] + "\n")
    time.sleep(%g)
    return arg + "+" + %q
`, path, name, sleep, name)
}

// stepRuns counts the runs stepCode logged, by "NAME CALL".
func stepRuns(t *testing.T, path string) (map[string]int, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	runs, total := map[string]int{}, 0
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l != "" {
			runs[l]++
			total++
		}
	}
	return runs, total
}

// chain3 makes the chain NAMEa → NAMEb → NAMEc → RETURN, each step
// logging to logFile and sleeping sleep seconds, each on a pod of its own.
func chain3(t *testing.T, s *framework.APIServer, prefix, logFile string, sleep float64) []string {
	t.Helper()
	names := []string{prefix + "a", prefix + "b", prefix + "c"}
	for i, n := range names {
		next := "RETURN"
		if i+1 < len(names) {
			next = names[i+1]
		}
		code := stepCode(logFile, n, sleep)
		funcTemplate(t, s, n, code, next, next, nil)
		publish(t, s, n, runtime(t, code))
	}
	return names
}

// instancesByRunner lists the stored instances of fn by status.runner.
func instancesByRunner(t *testing.T, s *framework.APIServer, fn string) (map[string][]*api.FuncInstance, error) {
	t.Helper()
	list, _, err := s.Client.FuncInstances("default").List(context.Background(),
		client.ListOptions{FieldSelector: "spec.function=" + fn})
	if err != nil {
		return nil, err
	}
	out := map[string][]*api.FuncInstance{}
	for _, inst := range list {
		out[inst.Status.Runner] = append(out[inst.Status.Runner], inst)
	}
	return out, nil
}

func unfinished(insts []*api.FuncInstance) []*api.FuncInstance {
	var out []*api.FuncInstance
	for _, inst := range insts {
		if inst.Status.Phase != api.InstanceSucceeded && inst.Status.Phase != api.InstanceFailed {
			out = append(out, inst)
		}
	}
	return out
}

// invokeAll makes n asynchronous calls of fn at once, with the arguments
// call-00, call-01…, and returns their instance ids.
func invokeAll(t *testing.T, s *framework.APIServer, fn string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id, err := tryInvoke(s, fn, fmt.Sprintf("call-%02d", i))
			if err != nil {
				t.Errorf("call %d: %v", i, err) // not the test's goroutine
			}
			ids[i] = id
		}(i)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

// waitBusy waits until both runners drive instances of fn (or a test
// killing one proves nothing), victim at least 5 unfinished ones, and
// returns the instances by runner then.
func waitBusy(t *testing.T, s *framework.APIServer, fn string, victim, survivor *framework.FuncRunner) map[string][]*api.FuncInstance {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		by, err := instancesByRunner(t, s, fn)
		if err != nil {
			t.Fatal(err)
		}
		if len(unfinished(by[victim.Identity])) >= 5 && len(by[survivor.Identity]) > 0 {
			return by
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the calls: %d instances driven by %s (%d unfinished), %d by %s, %d unclaimed: both runners must be busy",
				len(by[victim.Identity]), victim.Identity, len(unfinished(by[victim.Identity])),
				len(by[survivor.Identity]), survivor.Identity, len(by[""]))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFuncRunnersTakeOver: a runner dies abruptly (its Lease and claims
// left to expire) while it drives calls; the other runner finishes them
// all, each step recorded once, and no step runs again but the one each
// of the dead runner's calls had in flight.
func TestFuncRunnersTakeOver(t *testing.T) {
	s := framework.StartAPIServer(t)
	victim := framework.StartFuncRunner(t, s)
	survivor := framework.StartFuncRunner(t, s)
	logFile := filepath.Join(t.TempDir(), "runs.log")
	names := chain3(t, s, "tk", logFile, 0.3)

	const calls = 50
	start := time.Now()
	ids := invokeAll(t, s, names[0], calls)
	before := waitBusy(t, s, names[0], victim, survivor)
	t.Logf("%s after the first call: %d instances driven by the victim, %d by the survivor, %d unclaimed",
		time.Since(start).Round(time.Millisecond), len(before[victim.Identity]), len(before[survivor.Identity]), len(before[""]))
	victim.Kill(t)
	// Killed, it writes nothing more: what it holds now is what it held.
	after, err := instancesByRunner(t, s, names[0])
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, inst := range unfinished(after[victim.Identity]) {
		held[inst.Name] = true
	}
	t.Logf("the killed runner held %d unfinished instances of %d", len(held), calls)

	for i, id := range ids {
		v := result(t, s, id, 60*time.Second)
		want := fmt.Sprintf("call-%02d+%s+%s+%s", i, names[0], names[1], names[2])
		if v.Status != api.InstanceSucceeded || string(v.Result) != want || len(v.Steps) != 3 {
			t.Fatalf("call %d (%s): %s %q %q with %d steps, want Succeeded %q with 3 steps",
				i, id, v.Status, v.Result, v.Error, len(v.Steps), want)
		}
		for j, st := range v.Steps {
			if st.Function != names[j] {
				t.Errorf("call %d: step %d is %s, want %s: a step recorded twice or out of order", i, j, st.Function, names[j])
			}
		}
		if held[id] {
			inst, err := s.Client.FuncInstances("default").Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if inst.Status.Runner != survivor.Identity {
				t.Errorf("call %d, held by the killed runner, ended with runner %q, want %s", i, inst.Status.Runner, survivor.Identity)
			}
		}
	}

	runs, total := stepRuns(t, logFile)
	for i, id := range ids {
		for _, n := range names {
			k := fmt.Sprintf("%s call-%02d", n, i)
			if runs[k] == 0 || (!held[id] && runs[k] != 1) {
				t.Errorf("%s ran %d times (held by the killed runner: %v)", k, runs[k], held[id])
			}
		}
	}
	if extra := total - calls*len(names); extra < 0 || extra > len(held) {
		t.Errorf("%d step runs for %d steps: %d more than once, but the killed runner had only %d calls in flight",
			total, calls*len(names), extra, len(held))
	}
}

// syncOutcome is what a caller of a synchronous call got.
type syncOutcome struct {
	code int
	body []byte
	err  error
}

// TestFuncRunnerSyncDiesMidCall: the runner a synchronous call was handed
// to dies during the call: the caller gets an error answer, never hangs.
func TestFuncRunnerSyncDiesMidCall(t *testing.T) {
	s := framework.StartAPIServer(t)
	r := framework.StartFuncRunner(t, s)
	code := "import time\ndef run(arg):\n    time.sleep(3)\n    return arg\n"
	funcTemplate(t, s, "dies", code, "RETURN", "RETURN", nil)
	publish(t, s, "dies", runtime(t, code))

	out := make(chan syncOutcome, 1)
	go func() {
		hc := &http.Client{Timeout: 90 * time.Second}
		resp, err := hc.Post(s.URL+"/api/funcs/dies?wait=60s", "text/plain", strings.NewReader("x"))
		if err != nil {
			out <- syncOutcome{err: err}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		out <- syncOutcome{code: resp.StatusCode, body: data, err: err}
	}()
	// The runner has the call once it reports it in flight.
	waitDemand(t, s, "dies", func(d function.FuncDemand) bool { return d.InFlight >= 1 })
	r.Kill(t)

	select {
	case o := <-out:
		var ne net.Error
		switch {
		case o.err != nil && errors.As(o.err, &ne) && ne.Timeout():
			t.Fatalf("the caller waited until its own timeout: %v", o.err)
		case o.err != nil:
			t.Logf("the connection was closed: %v", o.err)
		case o.code < 500:
			t.Fatalf("the caller got %d %s, want a 5xx: its runner died", o.code, o.body)
		default:
			t.Logf("the caller got %d %s", o.code, o.body)
		}
	case <-time.After(100 * time.Second):
		t.Fatal("no answer 100s after the runner died")
	}
}

// TestFuncSyncRecordReadable: a synchronous call's record is readable at
// once by id, and listed with the stored instances soon after.
func TestFuncSyncRecordReadable(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	code := "def run(arg):\n    print('seen', arg)\n    return 'r:' + arg\n"
	funcTemplate(t, s, "rec", code, "RETURN", "RETURN", nil)
	publish(t, s, "rec", runtime(t, code))

	status, data := httpDo(t, "POST", s.URL+"/api/funcs/rec?wait=30s", "text/plain", []byte("hello"))
	if status != http.StatusOK {
		t.Fatalf("sync call: %d %s", status, data)
	}
	var answer api.FuncInstanceView
	if err := json.Unmarshal(data, &answer); err != nil || answer.InstanceID == "" {
		t.Fatalf("sync answer %s: %v", data, err)
	}
	if answer.Status != api.InstanceSucceeded || answer.Result != "r:hello" || len(answer.Steps) != 1 {
		t.Fatalf("sync answer: %+v", answer)
	}
	status, data = httpDo(t, "GET", s.URL+"/api/funcs/"+answer.InstanceID, "", nil)
	if status != http.StatusOK {
		t.Fatalf("GET %s right after the answer: %d %s", answer.InstanceID, status, data)
	}
	var got api.FuncInstanceView
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.InstanceID != answer.InstanceID || got.Status != answer.Status || got.Result != answer.Result ||
		len(got.Steps) != 1 || got.Steps[0].Output != "seen hello\n" || got.Steps[0].Result != answer.Steps[0].Result {
		t.Fatalf("GET right after the answer: %+v, answered %+v", got, answer)
	}

	url := s.URL + "/api/v1/namespaces/default/funcinstances?fieldSelector=spec.function=rec"
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, data = httpDo(t, "GET", url, "", nil)
		var list api.FuncInstanceList
		if status == http.StatusOK && json.Unmarshal(data, &list) == nil {
			for _, inst := range list.Items {
				if inst.Name == answer.InstanceID {
					if inst.Status.Phase != api.InstanceSucceeded || len(inst.Status.Steps) != 1 || !inst.Spec.Sync {
						t.Fatalf("listed record: %+v", inst)
					}
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s not listed at %s after 30s: %d %s", answer.InstanceID, url, status, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFuncSyncOutlivesWait: a synchronous call still running when its
// wait runs out answers 202 and goes on as an asynchronous one, each step
// run once.
func TestFuncSyncOutlivesWait(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	logFile := filepath.Join(t.TempDir(), "runs.log")
	slow, fast := stepCode(logFile, "slow", 2), stepCode(logFile, "fast", 0)
	funcTemplate(t, s, "slow", slow, "fast", "fast", nil)
	funcTemplate(t, s, "fast", fast, "RETURN", "RETURN", nil)
	publish(t, s, "slow", runtime(t, slow))
	publish(t, s, "fast", runtime(t, fast))

	status, data := httpDo(t, "POST", s.URL+"/api/funcs/slow?wait=1s", "text/plain", []byte("x"))
	var accepted struct {
		InstanceID string `json:"instanceId"`
	}
	if status != http.StatusAccepted || json.Unmarshal(data, &accepted) != nil || accepted.InstanceID == "" {
		t.Fatalf("call outliving its wait: %d %s, want 202 with an instanceId", status, data)
	}
	v := result(t, s, accepted.InstanceID, 60*time.Second)
	if v.Status != api.InstanceSucceeded || v.Result != "x+slow+fast" || len(v.Steps) != 2 ||
		v.Steps[0].Function != "slow" || v.Steps[1].Function != "fast" {
		t.Fatalf("instance after the wait: %+v", v)
	}
	time.Sleep(time.Second) // nothing may run after the end
	runs, total := stepRuns(t, logFile)
	if total != 2 || runs["slow x"] != 1 || runs["fast x"] != 1 {
		t.Fatalf("runs: %v, want slow and fast once each", runs)
	}
}

// TestFuncRunnerContainerConcurrency: a pod never gets more calls at once
// than its function's containerConcurrency, whatever its workers.
func TestFuncRunnerContainerConcurrency(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	times := filepath.Join(t.TempDir(), "times.log")
	code := fmt.Sprintf(`
import fcntl, time
def stamp(what):
    with open(%q, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write("%%s %%.6f\n" %% (what, time.time()))
def run(arg):
    stamp("start")
    time.sleep(0.5)
    stamp("end")
    return arg
`, times)
	funcTemplate(t, s, "cc2", code, "RETURN", "RETURN", map[string]any{"containerConcurrency": 2})
	publish(t, s, "cc2", runtimeWorkers(t, code, 4))

	const calls = 8
	var wg sync.WaitGroup
	answers := make([]syncOutcome, calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			resp, err := http.Post(s.URL+"/api/funcs/cc2?wait=60s", "text/plain", strings.NewReader(strconv.Itoa(i)))
			if err != nil {
				answers[i].err = err
				return
			}
			defer resp.Body.Close()
			answers[i].body, answers[i].err = io.ReadAll(resp.Body)
			answers[i].code = resp.StatusCode
		}(i)
	}
	wg.Wait()
	for i, a := range answers {
		if a.err != nil || a.code != http.StatusOK || !strings.Contains(string(a.body), `"result":"`+strconv.Itoa(i)+`"`) {
			t.Errorf("call %d: %d %s %v", i, a.code, a.body, a.err)
		}
	}
	peak, starts := maxOverlap(t, times)
	t.Logf("%d calls, at most %d at once in the pod", starts, peak)
	if starts != calls {
		t.Fatalf("the pod ran %d calls, want %d", starts, calls)
	}
	if peak > 2 {
		t.Errorf("the pod had %d calls at once, more than its containerConcurrency of 2", peak)
	}
	if peak < 2 {
		t.Errorf("the pod never had 2 calls at once: the limit was not put to the test")
	}
}

// maxOverlap reads the start and end stamps of the calls and returns the
// most that ran at once, and how many started.
func maxOverlap(t *testing.T, path string) (int, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		at    float64
		delta int
	}
	var events []event
	starts := 0
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		what, at, ok := strings.Cut(l, " ")
		f, err := strconv.ParseFloat(at, 64)
		if !ok || err != nil {
			t.Fatalf("bad stamp %q", l)
		}
		d := -1
		if what == "start" {
			d, starts = 1, starts+1
		}
		events = append(events, event{f, d})
	}
	// Ends first at equal times: a call that ended as another started did
	// not overlap it.
	sort.Slice(events, func(i, j int) bool {
		if events[i].at != events[j].at {
			return events[i].at < events[j].at
		}
		return events[i].delta < events[j].delta
	})
	cur, peak := 0, 0
	for _, e := range events {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak, starts
}

// TestFuncSyncRecordsBatched: the records of many synchronous calls at
// once, stored in batches, are each listed once with their step.
func TestFuncSyncRecordsBatched(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartLocalFuncRunner(t, s)
	code := "def run(arg):\n    return 'r:' + arg\n"
	funcTemplate(t, s, "many", code, "RETURN", "RETURN", nil)
	publish(t, s, "many", runtime(t, code))

	const calls, callers = 400, 16
	ids := make(chan string, calls)
	var wg sync.WaitGroup
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < calls; i += callers {
				arg := strconv.Itoa(i)
				// Not httpDo: t.Fatal belongs to the test's goroutine.
				resp, err := http.Post(s.URL+"/api/funcs/many?wait=60s", "text/plain", strings.NewReader(arg))
				if err != nil {
					t.Errorf("call %d: %v", i, err)
					return
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var v api.FuncInstanceView
				if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &v) != nil || string(v.Result) != "r:"+arg {
					t.Errorf("call %d: %d %s", i, resp.StatusCode, data)
					return
				}
				ids <- v.InstanceID
			}
		}()
	}
	wg.Wait()
	close(ids)
	want := map[string]bool{}
	for id := range ids {
		want[id] = true
	}
	if len(want) != calls {
		t.Fatalf("%d distinct instances answered, want %d", len(want), calls)
	}
	url := s.URL + "/api/v1/namespaces/default/funcinstances?fieldSelector=spec.function=many"
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, data := httpDo(t, "GET", url, "", nil)
		var list api.FuncInstanceList
		seen := 0
		if status == http.StatusOK && json.Unmarshal(data, &list) == nil {
			for _, inst := range list.Items {
				if !want[inst.Name] {
					t.Fatalf("listed an instance no call answered: %s", inst.Name)
				}
				if inst.Status.Phase != api.InstanceSucceeded || len(inst.Status.Steps) != 1 || !inst.Spec.Sync {
					t.Fatalf("record %s: %+v", inst.Name, inst.Status)
				}
				seen++
			}
		}
		if seen == calls {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records listed after 60s", seen, calls)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestFuncBacklogBound: past --max-pending-calls asynchronous calls not
// ended, a call gets 429 with Retry-After, naming the bound, and nothing
// is stored; once the backlog drains, calls are taken again.
func TestFuncBacklogBound(t *testing.T) {
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) { c.MaxPendingCalls = 5 })
	framework.StartFuncRunner(t, s)
	code := "def run(arg):\n    return arg\n"
	funcTemplate(t, s, "stuck", code, "RETURN", "RETURN", nil) // no pod yet: calls wait

	accepted := 0
	var shed *http.Response
	var shedBody []byte
	deadline := time.Now().Add(30 * time.Second)
	for shed == nil {
		resp, err := http.Post(s.URL+"/api/funcs/stuck", "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusAccepted:
			accepted++
		case http.StatusTooManyRequests:
			shed, shedBody = resp, data
		default:
			t.Fatalf("call: %d %s", resp.StatusCode, data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls accepted, none refused after 30s", accepted)
		}
		if accepted >= 5 {
			time.Sleep(50 * time.Millisecond) // the runners report the backlog
		}
	}
	if accepted < 5 {
		t.Fatalf("refused after %d calls, want at least the bound of 5", accepted)
	}
	if shed.Header.Get("Retry-After") == "" || !strings.Contains(string(shedBody), "--max-pending-calls 5") {
		t.Fatalf("429 without Retry-After or naming the bound: %v %s", shed.Header, shedBody)
	}
	items, _, err := s.Client.FuncInstances("default").List(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != accepted {
		t.Fatalf("%d instances stored, %d calls accepted: a refused call wrote something", len(items), accepted)
	}

	publish(t, s, "stuck", runtime(t, code))
	deadline = time.Now().Add(60 * time.Second)
	for {
		if id, err := tryInvoke(s, "stuck", "y"); err == nil {
			if v := result(t, s, id, 60*time.Second); v.Status != api.InstanceSucceeded {
				t.Fatalf("call after the backlog drained: %+v", v)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("calls still refused 60s after the function got a pod")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAsyncCallStoredClaimed: an asynchronous call is stored already
// claimed by a live runner, so that no claim write is on its path: the
// record's first version, as a watch sees it, names the runner. (Until
// the apiserver's runner directory has seen the runner's Lease, a call is
// stored unclaimed and the runner claims it: the test waits for that.)
func TestAsyncCallStoredClaimed(t *testing.T) {
	s := framework.StartAPIServer(t)
	r := framework.StartFuncRunner(t, s)
	funcTemplate(t, s, "claimed", "def run(arg):\n    return arg\n", "RETURN", "", nil)
	insts := s.Client.FuncInstances("default")
	firstVersion := func() *api.FuncInstance {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, rv, err := insts.List(ctx, client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		events := insts.Watch(ctx, client.ListOptions{ResourceVersion: rv})
		id := invoke(t, s, "claimed", "x")
		for ev := range events {
			if ev.Object != nil && ev.Object.Name == id {
				if ev.Type != api.Added {
					t.Fatalf("first event of %s: %s, want ADDED", id, ev.Type)
				}
				return ev.Object
			}
		}
		t.Fatalf("no event of %s within 10s", id)
		return nil
	}
	waitUntil(t, 30*time.Second, "an asynchronous call stored claimed by the runner", func() bool {
		inst := firstVersion()
		if inst.Status.Runner != "" && inst.Status.Runner != r.Identity {
			t.Fatalf("stored claimed by %q, want %s", inst.Status.Runner, r.Identity)
		}
		return inst.Status.Runner == r.Identity
	})
}
