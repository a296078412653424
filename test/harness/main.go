package harness

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// How a test binary that uses the harness ends without leaking:
//
//   - Normal end: each Start* registers its teardown with Track, which runs
//     it from t.Cleanup (or b.Cleanup).
//   - SIGINT, SIGTERM: Main traps them, runs every pending teardown (last
//     registered first), sweeps the run dir and exits 1. A second signal
//     exits at once.
//   - -timeout: testing panics when -test.timeout passes, and a panic runs
//     no cleanup. Main takes the timeout over: it arms its own timer at the
//     timeout, which prints the goroutines (as testing's panic would),
//     runs the teardowns, sweeps the run dir and exits 2; testing's own
//     alarm is pushed back past teardownBudget to stay a backstop, and it
//     still fires before `go test` kills the binary (timeout + 1 minute).
//   - SIGKILL, or a teardown that hangs: the daemons the harness starts
//     get SIGKILL from the kernel when the binary dies (Pdeathsig), and the
//     next test binary's Main sweeps the run dir the dead one left (see
//     sweep.go): its processes (containerd's shims survive it), runc
//     containers, mounts, network namespaces and files.

// teardownBudget bounds the teardowns of an abnormal end, so that the run
// dir is still swept before `go test` gives up on the binary.
const teardownBudget = 40 * time.Second

// teardown is one registered cleanup, run exactly once by whichever of the
// test's cleanup and Main's abnormal end comes first.
type teardown struct {
	name string
	test string
	once sync.Once
	fn   func(errorf func(format string, args ...any))
}

var registry struct {
	mu   sync.Mutex
	list []*teardown
}

// Track registers fn to undo what name started for t: it runs when t ends
// or, if the binary ends first (signal, timeout), from Main. fn reports
// leftovers with errorf (t.Errorf, or stderr when the test is gone).
func Track(t testing.TB, name string, fn func(errorf func(format string, args ...any))) {
	td := &teardown{name: name, test: t.Name(), fn: fn}
	registry.mu.Lock()
	registry.list = append(registry.list, td)
	registry.mu.Unlock()
	t.Cleanup(func() { td.run(t.Errorf) })
}

func (td *teardown) run(errorf func(format string, args ...any)) {
	td.once.Do(func() {
		td.fn(errorf)
		registry.mu.Lock()
		for i, x := range registry.list {
			if x == td {
				registry.list = append(registry.list[:i], registry.list[i+1:]...)
				break
			}
		}
		registry.mu.Unlock()
	})
}

// pending lists the teardowns not yet run, last registered first.
func pending() []*teardown {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	out := make([]*teardown, 0, len(registry.list))
	for i := len(registry.list) - 1; i >= 0; i-- {
		out = append(out, registry.list[i])
	}
	return out
}

func stderrf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "harness: "+format+"\n", args...)
}

// runPending runs every pending teardown within budget and reports whether
// they all finished.
func runPending(budget time.Duration) bool {
	done := make(chan struct{})
	go func() {
		for _, td := range pending() {
			stderrf("tearing down %s (test %s)", td.name, td.test)
			td.run(stderrf)
		}
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(budget):
		stderrf("teardowns did not finish within %v; sweeping what is left", budget)
		return false
	}
}

var (
	abortOnce sync.Once
	// aborting: the binary is ending abnormally while its tests still run;
	// nothing may start again what the teardowns stop.
	aborting atomic.Bool
)

// HoldIfAborting parks a test that would start a part while the binary
// is being torn down (a test that restarts a kubelet, say): the binary
// exits soon.
func HoldIfAborting() {
	if aborting.Load() {
		select {}
	}
}

// abort ends the binary abnormally: teardowns, then a sweep of the run dir
// that leaves nothing of this binary behind even if a teardown hung.
func abort(code int) {
	abortOnce.Do(func() {
		aborting.Store(true)
		runPending(teardownBudget)
		finish()
		os.Exit(code)
	})
	select {} // another goroutine is aborting
}

// finish sweeps this binary's run dir and reports what it had to remove
// that no teardown did.
func finish() bool {
	dir := runDirIfAny()
	if dir == "" {
		return true
	}
	left := SweepDir(dir)
	for _, l := range left {
		stderrf("left behind: %s", l)
	}
	releaseRunDir()
	return len(left) == 0
}

// Main runs the tests of a package that uses the harness; call it from
// the package's TestMain:
//
//	func TestMain(m *testing.M) { harness.Main(m) }
//
// It sweeps what earlier, dead test binaries left, gives this binary a run
// dir (TMPDIR points into it, so t.TempDir and os.MkdirTemp land there
// too), and makes teardown survive SIGINT, SIGTERM and -timeout.
func Main(m *testing.M) {
	flag.Parse()
	dir := RunDir()
	if err := os.Setenv("TMPDIR", dir); err != nil {
		stderrf("setting TMPDIR: %v", err)
	}

	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigc
		stderrf("got %v: tearing down (send it again to exit at once)", sig)
		go func() {
			sig := <-sigc
			stderrf("got %v again: exiting without teardown; the next run sweeps %s", sig, dir)
			os.Exit(1)
		}()
		abort(1)
	}()

	var alarm *time.Timer
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, ok := f.Value.(flag.Getter).Get().(time.Duration); ok && d > 0 {
			_ = flag.Set("test.timeout", (d + teardownBudget + 10*time.Second).String())
			alarm = time.AfterFunc(d, func() {
				var names []string
				seen := map[string]bool{}
				for _, td := range pending() {
					if !seen[td.test] {
						seen[td.test] = true
						names = append(names, td.test)
					}
				}
				fmt.Fprintf(os.Stderr, "panic: test timed out after %v\nrunning tests (with harness parts): %v\n\n", d, names)
				_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
				abort(2)
			})
		}
	}

	code := m.Run()
	if alarm != nil {
		alarm.Stop()
	}
	signal.Stop(sigc)
	// Teardowns ran in cleanups; a test that leaves something is a failure.
	if !runPending(teardownBudget) {
		code = 1
	}
	if !finish() && code == 0 {
		code = 1
	}
	os.Exit(code)
}
