package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/controller/funcinstancegc"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/function"
	"minik8s/pkg/storage/etcd"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// unfinished selects the instances still to end.
const unfinished = "status.phase!=" + api.InstanceSucceeded + ",status.phase!=" + api.InstanceFailed

// envInt reads a positive count from the environment, else def: a smaller
// count makes a long benchmark a quick check.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// waitAllEnded waits until no instance of fn is left unfinished. It
// follows them by watch: polling a list of thousands of instances would
// cost the machine more than the calls it measures.
func waitAllEnded(b *testing.B, s *framework.APIServer, fn string, within time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	opts := client.ListOptions{FieldSelector: unfinished, LabelSelector: function.LabelFunc + "=" + fn}
	inf := cache.NewInformer[api.FuncInstance](s.Client.FuncInstances("default"), cache.WithListOptions(opts))
	inf.Start(ctx)
	if !cache.WaitForSync(ctx, inf) {
		b.Fatalf("instances of %s: the informer did not sync", fn)
	}
	for inf.Lister().Len() > 0 {
		select {
		case <-ctx.Done():
			b.Fatalf("%d instances of %s still unfinished after %s", inf.Lister().Len(), fn, within)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// BenchmarkFuncAsyncAccept measures how fast asynchronous calls are
// accepted (stored, then 202) by 16 concurrent callers, while the runner
// drives them; then how long until all have ended.
func BenchmarkFuncAsyncAccept(b *testing.B) {
	s := startWarm(b)
	warmFunc(b, s, "acc", echoCode, "RETURN", "")
	syncCall(b, s, "acc", "warm-up")
	b.ResetTimer()
	start := time.Now()
	lat, perSec, errs, first := concurrently(b.N, callers, func(i int) error {
		_, err := tryAccept(s, "acc", strconv.Itoa(i))
		return err
	})
	b.StopTimer()
	if errs > 0 {
		b.Fatalf("%d of %d calls not accepted, first: %v", errs, b.N, first)
	}
	waitAllEnded(b, s, "acc", 10*time.Minute)
	b.ReportMetric(percentile(lat, 50), "accept-p50-ms")
	b.ReportMetric(percentile(lat, 99), "accept-p99-ms")
	b.ReportMetric(perSec, "accepts/s")
	b.ReportMetric(time.Since(start).Seconds(), "all-ended-s")
}

// tagCountdown counts "N:TAG" down to "0:TAG", one step per unit.
const tagCountdown = `def run(arg):
    n, tag = arg.split(":", 1)
    return "%d:%s" % (int(n) - 1, tag)

def check(ret):
    return int(ret.split(":", 1)[0]) > 0
`

// BenchmarkFuncAsyncBurstFromZero sends 10 000 asynchronous calls at once
// (MINIK8S_BENCH_BURST_CALLS overrides) to a two-step function at zero
// pods with maxInstanceNum 20, on a one-node cluster: every call must be
// accepted and end with exactly its two steps, each run once. It reports
// the time until all were accepted and until all had ended, and the most
// pods seen running. One burst per run, whatever b.N.
func BenchmarkFuncAsyncBurstFromZero(b *testing.B) {
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportFunctionRuntime(b)
	s := framework.StartAPIServer(b)
	framework.StartFuncRunner(b, s)
	// A budget above the burst: no record is collected before it is checked.
	framework.StartControllers(b, s, controller.Config{FuncScaleInterval: time.Second, FuncIdleWindow: 30 * time.Second,
		FuncInstanceBudget: 1 << 20})
	framework.StartScheduler(b, s, scheduler.Config{})
	framework.StartKubelet(b, s.URL, ctd, "node-burst", "127.0.0.32")
	zero, most := 0, 20
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: "burst"},
		Spec: api.FuncSpec{Name: "burst", Function: base64.StdEncoding.EncodeToString([]byte(tagCountdown)),
			Left: "burst", Right: api.FuncReturn, MinInstanceNum: &zero, InitInstanceNum: &zero, MaxInstanceNum: &most}}
	if _, err := s.Client.Funcs("default").Create(context.Background(), f); err != nil {
		b.Fatal(err)
	}
	toZero(b, s, "burst")
	n := envInt("MINIK8S_BENCH_BURST_CALLS", 10000)

	b.ResetTimer()
	peak, stopPods := watchPeakPods(s, "burst")
	start := time.Now()
	ids, lat, acceptedIn, errs, first := burst(s, "burst", n)
	waitAllEnded(b, s, "burst", 30*time.Minute)
	ended := time.Since(start)
	stopPods()
	b.StopTimer()

	bad, firstBad := checkBurst(b, s, ids)
	b.ReportMetric(float64(n), "calls")
	b.ReportMetric(float64(errs), "accept-errors")
	b.ReportMetric(percentile(lat, 50), "accept-p50-ms")
	b.ReportMetric(acceptedIn.Seconds(), "all-accepted-s")
	b.ReportMetric(ended.Seconds(), "all-ended-s")
	b.ReportMetric(float64(peak()), "peak-pods")
	b.ReportMetric(float64(bad), "bad-instances")
	b.Logf("%d calls: %d not accepted (first: %v); all accepted in %s, all ended in %s; %d pods at most; %d instances with wrong steps (first: %s)",
		n, errs, first, acceptedIn, ended, peak(), bad, firstBad)
	if errs > 0 || bad > 0 {
		b.Errorf("%d calls not accepted, %d instances with wrong steps", errs, bad)
	}
}

// burst makes n asynchronous calls at once, with arguments "2:i", and
// returns the accepted ids by argument, the accept latencies, the time
// until the last answer, and the failures.
func burst(s *framework.APIServer, fn string, n int) (map[string]string, []time.Duration, time.Duration, int, error) {
	// Connections are bounded: 10 000 of them on each side would pass the
	// process's file limit; the calls beyond wait for one, all started at once.
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: 1024, MaxIdleConnsPerHost: 1024},
		Timeout: 5 * time.Minute}
	var mu sync.Mutex
	ids := make(map[string]string, n)
	lat := make([]time.Duration, 0, n)
	var errs int
	var first error
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arg := fmt.Sprintf("2:%d", i)
			<-gate
			t0 := time.Now()
			id, err := tryAcceptWith(hc, s, fn, arg)
			d := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, d)
			if err != nil {
				if errs++; first == nil {
					first = err
				}
				return
			}
			ids[arg] = id
		}()
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	return ids, lat, time.Since(start), errs, first
}

// checkBurst verifies every accepted call ended with exactly its two
// steps: "2:i" → "1:i", then "1:i" → "0:i", and the result "0:i".
func checkBurst(b *testing.B, s *framework.APIServer, ids map[string]string) (int, string) {
	b.Helper()
	items, _, err := s.Client.FuncInstances("default").List(context.Background(),
		client.ListOptions{LabelSelector: function.LabelFunc + "=burst"})
	if err != nil {
		b.Fatal(err)
	}
	byID := make(map[string]*api.FuncInstance, len(items))
	for _, it := range items {
		byID[it.Name] = it
	}
	bad, firstBad := 0, ""
	for arg, id := range ids {
		if why := burstWrong(byID[id], arg); why != "" {
			if bad++; firstBad == "" {
				firstBad = id + ": " + why
			}
		}
	}
	if extra := len(items) - len(ids); extra != 0 {
		if bad++; firstBad == "" {
			firstBad = fmt.Sprintf("%d instances of burst, %d calls accepted", len(items), len(ids))
		}
	}
	return bad, firstBad
}

func burstWrong(inst *api.FuncInstance, arg string) string {
	if inst == nil {
		return "no record"
	}
	tag := arg[len("2:"):]
	want := []api.FuncStepRecord{{Function: "burst", Arg: api.Bytes("2:" + tag), Result: api.Bytes("1:" + tag)}, {Function: "burst", Arg: api.Bytes("1:" + tag), Result: api.Bytes("0:" + tag)}}
	st := inst.Status
	if st.Phase != api.InstanceSucceeded || string(st.Result) != "0:"+tag || len(st.Steps) != len(want) {
		return fmt.Sprintf("phase %s, result %q, error %q, %d steps", st.Phase, st.Result, st.Error, len(st.Steps))
	}
	for i, w := range want {
		if got := st.Steps[i]; got.Function != w.Function || got.Arg != w.Arg || got.Result != w.Result || got.Error != "" {
			return fmt.Sprintf("step %d: %s(%q) = %q (error %q), want %s(%q) = %q", i, got.Function, got.Arg, got.Result, got.Error, w.Function, w.Arg, w.Result)
		}
	}
	return ""
}

// watchPeakPods counts the Running pods of fn every half second until
// stopped; peak returns the most seen.
func watchPeakPods(s *framework.APIServer, fn string) (peak func() int, stop func()) {
	var most atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: function.LabelFunc + "=" + fn})
			if err == nil {
				running := 0
				for _, p := range pods {
					if p.Status.Phase == api.PodRunning {
						running++
					}
				}
				if int64(running) > most.Load() {
					most.Store(int64(running))
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() int { return int(most.Load()) }, func() { cancel(); <-done }
}

// BenchmarkFuncLongRun makes 200 000 calls (MINIK8S_BENCH_LONG_CALLS
// overrides), every other one synchronous, the rest asynchronous, from 32
// callers, with the record retention of a cluster (the instance GC's
// default budget). It first fills the budget with records, the state a
// busy cluster is always in, then reports etcd's database size and the
// heap of the test process (apiserver, embedded etcd, runner, GC, callers:
// all in process) before the run, at its peak and after it, after a GC.
func BenchmarkFuncLongRun(b *testing.B) {
	s := startWarm(b)
	framework.StartControllers(b, s, controller.Config{Controllers: []string{funcinstancegc.Name}})
	warmFunc(b, s, "long", echoCode, "RETURN", "")
	n := envInt("MINIK8S_BENCH_LONG_CALLS", 200000)
	budget := funcinstancegc.DefaultBudget

	// Steady state: the budget full of records.
	if _, _, errs, first := concurrently(budget, callers, func(i int) error {
		_, err := trySyncCall(s, "long", "fill")
		return err
	}); errs > 0 {
		b.Fatalf("%d of %d calls filling the budget failed, first: %v", errs, budget, first)
	}
	waitKept(s, "long", budget, time.Minute)
	dbBefore := etcdDBSize(b, s)
	heapBefore := heapInuse(true)
	shedBefore := shed.Load()
	stopHeap := watchPeakHeap()
	b.ResetTimer()
	start := time.Now()
	_, perSec, errs, first := concurrently(n, 32, func(i int) error {
		if i%2 == 0 {
			_, err := trySyncCall(s, "long", strconv.Itoa(i))
			return err
		}
		_, err := tryAccept(s, "long", strconv.Itoa(i))
		return err
	})
	waitAllEnded(b, s, "long", 30*time.Minute)
	elapsed := time.Since(start)
	b.StopTimer()
	peak := stopHeap()
	kept := waitKept(s, "long", budget, 5*time.Minute)
	// What the run left in etcd's history goes at the next compactions.
	time.Sleep(2*etcd.DefaultCompactInterval + 5*time.Second)
	heapAfter := heapInuse(true)
	dbAfter := etcdDBSize(b, s)

	const mb = 1 << 20
	b.ReportMetric(float64(n), "calls")
	b.ReportMetric(float64(errs), "errors")
	b.ReportMetric(perSec, "calls/s")
	b.ReportMetric(float64(shed.Load()-shedBefore), "shed-429")
	b.ReportMetric(elapsed.Seconds(), "all-ended-s")
	b.ReportMetric(float64(kept), "records-kept")
	b.ReportMetric(float64(dbBefore)/mb, "etcd-db-before-MB")
	b.ReportMetric(float64(dbAfter)/mb, "etcd-db-after-MB")
	b.ReportMetric(float64(heapBefore)/mb, "heap-before-MB")
	b.ReportMetric(float64(peak)/mb, "heap-peak-MB")
	b.ReportMetric(float64(heapAfter)/mb, "heap-after-gc-MB")
	b.ReportMetric(float64(heapAfter)/float64(heapBefore), "heap-after/before")
	if errs > 0 {
		b.Errorf("%d of %d calls failed, first: %v", errs, n, first)
	}
}

// etcdDBSize is the size of the embedded etcd's bbolt file (member/snap/db
// under the apiserver's data dir).
func etcdDBSize(b *testing.B, s *framework.APIServer) int64 {
	b.Helper()
	var size int64 = -1
	err := filepath.WalkDir(s.DataDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "db" && filepath.Base(filepath.Dir(p)) == "snap" {
			if fi, err := d.Info(); err == nil {
				size = fi.Size()
			}
		}
		return nil
	})
	if err != nil || size < 0 {
		b.Fatalf("no etcd db file under %s (%v)", s.DataDir, err)
	}
	return size
}

// heapInuse is the process's live heap (HeapAlloc), after a collection
// when gc.
func heapInuse(gc bool) uint64 {
	if gc {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// watchPeakHeap samples HeapInuse every 100ms until stopped; stop returns
// the most seen.
func watchPeakHeap() (stop func() uint64) {
	var most atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if h := heapInuse(false); h > most.Load() {
				most.Store(h)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { cancel(); <-done; return most.Load() }
}

// waitKept waits until the instance GC has brought fn's records within
// budget (or within passes) and returns how many are left.
func waitKept(s *framework.APIServer, fn string, budget int, within time.Duration) int {
	opts := client.ListOptions{LabelSelector: function.LabelFunc + "=" + fn}
	deadline := time.Now().Add(within)
	for {
		items, _, err := s.Client.FuncInstances("default").List(context.Background(), opts)
		if err == nil && (len(items) <= budget || time.Now().After(deadline)) {
			return len(items)
		}
		time.Sleep(2 * time.Second)
	}
}
