package test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// checkFuncRevisions: every change of a function's code makes a revision,
// numbered from 1; a call may name one (NAME@N); spec.traffic splits the
// calls; an older revision serves from a pool of its own that goes back to
// zero; a rollback puts an earlier one back; each call records the
// revision it ran on, and a rollout under load loses no call.
func checkFuncRevisions(t *testing.T, s *framework.APIServer, gateway string) {
	dir := t.TempDir()
	src := func(v string) string {
		p := filepath.Join(dir, v+".py")
		if err := os.WriteFile(p, []byte("def run(arg):\n    return '"+v+":' + arg\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mustMkctl(t, s, "func", "create", "rev", "-f", src("v1"), "--max", "3")
	waitRevision(t, s, "rev", 1)
	checkAnswer(t, syncInvoke(t, s, "rev", "a"), "v1:a", 1)

	mustMkctl(t, s, "func", "update", "rev", "-f", src("v2"))
	waitRevision(t, s, "rev", 2)
	checkAnswer(t, syncInvoke(t, s, "rev", "b"), "v2:b", 2)
	// A change of the bounds is no new revision.
	mustMkctl(t, s, "func", "update", "rev", "--max", "4")

	// Revision 1 by name, through the API and mkctl: its own pool.
	checkAnswer(t, syncInvoke(t, s, "rev@1", "c"), "v1:c", 1)
	if out := mustMkctl(t, s, "func", "invoke", "rev@1", "-d", "d", "--wait"); strings.TrimSpace(out) != "v1:d" {
		t.Errorf("mkctl func invoke rev@1: %q", out)
	}
	out := mustMkctl(t, s, "func", "revisions", "rev")
	if rows := strings.Split(strings.TrimSpace(out), "\n"); len(rows) != 3 || !strings.HasPrefix(rows[1], "1 ") || !strings.HasPrefix(rows[2], "2 (latest)   100%") {
		t.Errorf("mkctl func revisions rev: want revisions 1 and 2, the latest with all the traffic:\n%s", out)
	}

	// Mistakes, answered clearly.
	for _, c := range []struct {
		target string
		code   int
		want   string
	}{
		{"rev@9", http.StatusNotFound, `has no revision 9`},
		{"rev@x", http.StatusBadRequest, "NAME@N with N from 1"},
	} {
		resp, err := http.Post(s.URL+"/api/funcs/"+c.target+"?wait=10s", "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("POST /api/funcs/%s: %d %s, want %d saying %q", c.target, resp.StatusCode, body, c.code, c.want)
		}
	}
	if r := runMkctl(t, s, "", "func", "update", "rev", "--traffic", "7=50,latest=50"); r.code == 0 || !strings.Contains(r.err, "spec.traffic[0].revision") {
		t.Errorf("traffic to a revision that does not exist: exit %d\n%s", r.code, r.err)
	}
	if r := runMkctl(t, s, "", "func", "update", "rev", "--traffic", "1=50,latest=40"); r.code == 0 || !strings.Contains(r.err, "add up to 100") {
		t.Errorf("traffic that does not add up: exit %d\n%s", r.code, r.err)
	}

	// 90/10 over 1000 calls.
	mustMkctl(t, s, "func", "update", "rev", "--traffic", "1=90,latest=10")
	got := callMany(t, s, "rev", 1000, 16, nil)
	t.Logf("a 90/10 split: %v calls by revision", got)
	if n := got[1]; n < 850 || n > 950 {
		t.Errorf("a 90/10 split sent %d of 1000 calls to revision 1 (and %d to 2), want 850-950", n, got[2])
	}
	out = mustMkctl(t, s, "func", "revisions", "rev")
	if !strings.Contains(out, "90%") || !strings.Contains(out, "10%") {
		t.Errorf("mkctl func revisions does not show the split:\n%s", out)
	}
	// Through the gateway too: an HTTP trigger's calls follow the split.
	mustMkctl(t, s, "trigger", "add", "http", "rev-web", "--function", "rev", "--path", "/rev")
	byRev := map[string]int{}
	for i := 0; i < 40; i++ {
		resp, err := http.Post("http://"+gateway+"/rev", "text/plain", strings.NewReader(fmt.Sprintf("g%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		v, arg, _ := strings.Cut(string(body), ":")
		if resp.StatusCode != http.StatusOK || arg != fmt.Sprintf("g%d", i) || (v != "v1" && v != "v2") {
			t.Fatalf("a call through the gateway: %d %q", resp.StatusCode, body)
		}
		byRev[v]++
	}
	if byRev["v1"] < 28 {
		t.Errorf("a 90/10 split through the gateway answered %v of 40 calls", byRev)
	}

	// A rollout under load: 200 calls over a change of code (revision 3)
	// and a rollback to revision 1; each answered by exactly one revision.
	mustMkctl(t, s, "func", "update", "rev", "--traffic", "latest=100")
	got = callMany(t, s, "rev", 200, 8, func(i int) {
		switch i {
		case 60:
			mustMkctl(t, s, "func", "update", "rev", "-f", src("v3"))
		case 130:
			if out := mustMkctl(t, s, "func", "rollback", "rev", "--to", "1"); !strings.Contains(out, "rolled back to revision 1") {
				t.Errorf("mkctl func rollback: %s", out)
			}
		}
	})
	t.Logf("over the rollout: %v calls by revision", got)
	if got[3] == 0 || got[1] == 0 {
		t.Errorf("calls over the rollout by revision %v: want some on revision 3 and some on 1 after the rollback", got)
	}
	f, err := s.Client.Funcs("default").Get(t.Context(), "rev")
	if err != nil || f.Status.Revision != 1 || f.Status.RevisionsMade != 3 || len(f.Spec.Traffic) != 0 {
		t.Errorf("after the rollback: revision %d of %d made, traffic %v (%v); want 1 of 3, none", f.Status.Revision, f.Status.RevisionsMade, f.Spec.Traffic, err)
	}

	// An older revision whose code does not start says so, as the latest
	// would, rather than let its calls wait out the cold start.
	bad := filepath.Join(dir, "bad.py")
	if err := os.WriteFile(bad, []byte("def run(arg)\n    return arg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustMkctl(t, s, "func", "create", "revbad", "-f", bad)
	waitRevision(t, s, "revbad", 1)
	mustMkctl(t, s, "func", "update", "revbad", "-f", src("v1"))
	waitRevision(t, s, "revbad", 2)
	checkAnswer(t, syncInvoke(t, s, "revbad", "e"), "v1:e", 2)
	if v := syncInvoke(t, s, "revbad@1", "f"); v.Status != api.InstanceFailed || !strings.Contains(v.Error, "revision 1 cannot start") ||
		!strings.Contains(v.Error, "SyntaxError") {
		t.Errorf("a call of a broken older revision: %s %q, want it failed saying the revision cannot start, and why", v.Status, v.Error)
	}

	// Revisions without traffic go back to zero pods, and keep nothing.
	waitFor(t, "the older revisions' pools to go", 90*time.Second, func() bool {
		pods, _, err := s.Client.Pods("default").List(t.Context(), client.ListOptions{LabelSelector: function.LabelRevisionOf})
		rss, _, rerr := s.Client.ReplicaSets("default").List(t.Context(), client.ListOptions{LabelSelector: function.LabelRevisionOf})
		return err == nil && rerr == nil && len(pods) == 0 && len(rss) == 0
	})
}

// checkAnswer checks a call answered want on revision rev.
func checkAnswer(t *testing.T, v api.FuncInstanceView, want string, rev int64) {
	t.Helper()
	if v.Status != api.InstanceSucceeded || string(v.Result) != want || len(v.Steps) != 1 || v.Steps[0].Revision != rev {
		t.Errorf("call %s: %s %q on revision %v, want %q on revision %d", v.InstanceID, v.Status, v.Result, revisionsOf(v), want, rev)
	}
}

func revisionsOf(v api.FuncInstanceView) []int64 {
	var out []int64
	for _, s := range v.Steps {
		out = append(out, s.Revision)
	}
	return out
}

// waitRevision waits for fn's status to name revision n.
func waitRevision(t *testing.T, s *framework.APIServer, fn string, n int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("revision %d of %s", n, fn), 30*time.Second, func() bool {
		f, err := s.Client.Funcs("default").Get(t.Context(), fn)
		return err == nil && f.Status.Revision == n
	})
}

// callMany makes n synchronous calls of fn, workers at once, calling
// before(i) first for each; every call must succeed with a result
// "vK:ARG" on revision K. It returns the calls per revision.
func callMany(t *testing.T, s *framework.APIServer, fn string, n, workers int, before func(i int)) map[int64]int {
	t.Helper()
	var mu sync.Mutex
	got := map[int64]int{}
	var failures []string
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				arg := fmt.Sprintf("c%d", i)
				v, err := trySyncInvoke(s, fn, arg, 120*time.Second)
				mu.Lock()
				switch {
				case err != nil:
					failures = append(failures, err.Error())
				case v.Status != api.InstanceSucceeded || len(v.Steps) != 1 || v.Steps[0].Revision == 0 ||
					string(v.Result) != fmt.Sprintf("v%d:%s", v.Steps[0].Revision, arg):
					failures = append(failures, fmt.Sprintf("call %s (%s): %s %q on revision %v", v.InstanceID, arg, v.Status, v.Result, revisionsOf(v)))
				default:
					got[v.Steps[0].Revision]++
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		if before != nil {
			before(i)
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for i, f := range failures {
		if i == 5 {
			break
		}
		t.Error(f)
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d calls failed or answered for another revision than they recorded (by revision: %v)", len(failures), n, got)
	}
	return got
}
