package functions

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/storage/etcd/etcdtest"
)

func ptr[T any](v T) *T { return &v }

func TestDecayStep(t *testing.T) {
	created := time.Unix(1000, 0)
	idle := time.Minute
	later := created.Add(time.Hour)
	fn := func(counter int, opts ...func(*api.Func)) *api.Func {
		f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: api.FuncAPIVersionV2},
			ObjectMeta: api.ObjectMeta{Name: "fn", Namespace: "default", CreationTimestamp: &created},
			Spec:       api.FuncSpec{MinInstanceNum: ptr(1), MaxInstanceNum: ptr(3)},
			Status:     api.FuncStatus{ReplicaSetUID: "rs-1", Counter: counter}}
		for _, o := range opts {
			o(f)
		}
		return f
	}
	rs := func(uid string, replicas int32) *api.ReplicaSet {
		return &api.ReplicaSet{ObjectMeta: api.ObjectMeta{UID: uid}, Spec: api.ReplicaSetSpec{Replicas: &replicas}}
	}
	tests := []struct {
		name   string
		f      *api.Func
		rs     *api.ReplicaSet
		now    time.Time
		floor  int
		want   int
		wantOK bool
	}{
		{"idle, step applied: one step down", fn(3), rs("rs-1", 3), later, 0, 2, true},
		{"previous step not applied yet", fn(2), rs("rs-1", 3), later, 0, 0, false},
		{"replicaset behind the other way", fn(2), rs("rs-1", 1), later, 0, 0, false},
		{"no replicaset in the cache", fn(3), nil, later, 0, 0, false},
		{"another pool's replicaset", fn(3), rs("rs-old", 3), later, 0, 0, false},
		{"replicaset without replicas", fn(3), &api.ReplicaSet{ObjectMeta: api.ObjectMeta{UID: "rs-1"}}, later, 0, 0, false},
		{"at the minimum", fn(1), rs("rs-1", 1), later, 0, 0, false},
		{"counter above a lowered max: from max", fn(5), rs("rs-1", 3), later, 0, 2, true},
		{"called within the idle window", fn(3, func(f *api.Func) { ts := later.Add(-time.Second); f.Status.TimeStamp = &ts }),
			rs("rs-1", 3), later, 0, 0, false},
		{"created within the idle window", fn(3), rs("rs-1", 3), created.Add(time.Second), 0, 0, false},
		{"last call long ago", fn(3, func(f *api.Func) { ts := later.Add(-2 * idle); f.Status.TimeStamp = &ts }),
			rs("rs-1", 3), later, 0, 2, true},
		{"its own longer idle timeout: not idle yet", fn(3, func(f *api.Func) {
			ts := later.Add(-2 * idle)
			f.Status.TimeStamp, f.Spec.IdleTimeoutSeconds = &ts, ptr(300)
		}), rs("rs-1", 3), later, 0, 0, false},
		{"its own shorter idle timeout: idle", fn(3, func(f *api.Func) {
			ts := later.Add(-10 * time.Second)
			f.Status.TimeStamp, f.Spec.IdleTimeoutSeconds = &ts, ptr(5)
		}), rs("rs-1", 3), later, 0, 2, true},
		{"v1 has no pool", fn(3, func(f *api.Func) { f.APIVersion = api.FuncAPIVersionV1 }), rs("rs-1", 3), later, 0, 0, false},
		{"pool not made yet", fn(3, func(f *api.Func) { f.Status.ReplicaSetUID = "" }), rs("rs-1", 3), later, 0, 0, false},
		{"calls in flight need every pod", fn(3), rs("rs-1", 3), later, 3, 0, false},
		{"calls in flight need more than there are", fn(2), rs("rs-1", 2), later, 5, 0, false},
		{"calls in flight need fewer: one step down", fn(3), rs("rs-1", 3), later, 1, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := decayStep(tc.f, tc.rs, tc.now, idle, tc.floor)
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Errorf("decayStep = %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// startAPIServer runs a real apiserver on embedded etcd (test/framework
// cannot be imported here: it imports this package).
func startAPIServer(t *testing.T) *client.Client {
	t.Helper()
	store := etcdtest.Start(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The audit log in the test's dir, not data/ beside the package.
	cfg := apiserver.Config{AuditLogPath: filepath.Join(t.TempDir(), "audit.log")}
	go func() { done <- apiserver.New(cfg, store).Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("apiserver: %v", err)
		}
	})
	return client.New("http://" + l.Addr().String())
}

// An idle function's counter never gets more than one step ahead of its
// ReplicaSet, however many decay ticks pass before a sync writes the
// ReplicaSet; so the pool goes down one step at a time.
func TestDecayWaitsForTheReplicaSet(t *testing.T) {
	c := startAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctl := New(c, cache.NewFactory(c), Config{ScaleInterval: time.Hour, IdleWindow: time.Minute})
	ctl.now = func() time.Time { return time.Now().Add(time.Hour) } // every function is idle
	// Informers only: the test plays the decay ticks and syncs itself.
	for _, inf := range []interface{ Start(context.Context) }{ctl.funcs, ctl.rss, ctl.svcs, ctl.cms, ctl.pods, ctl.leases, ctl.revs} {
		inf.Start(ctx)
	}
	const key = "default/fn"
	rsName := function.ObjectName("fn")
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: api.FuncAPIVersionV2}, ObjectMeta: api.ObjectMeta{Name: "fn"},
		Spec: api.FuncSpec{Name: "fn", Function: base64.StdEncoding.EncodeToString([]byte("def run(arg):\n    return arg\n")),
			MinInstanceNum: ptr(0), InitInstanceNum: ptr(3), MaxInstanceNum: ptr(3)}}
	if _, err := c.Funcs("default").Create(ctx, f); err != nil {
		t.Fatal(err)
	}

	// settle waits until the caches hold what the apiserver holds, so that
	// each tick and sync sees the latest state (the old design's worst case).
	settle := func() (counter int, replicas int32) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			fresh, ferr := c.Funcs("default").Get(ctx, "fn")
			rs, rerr := c.ReplicaSets("default").Get(ctx, rsName)
			cf, fok := ctl.funcs.Lister().Get("default", "fn")
			crs, rok := ctl.rss.Lister().Get("default", rsName)
			if ferr == nil && fok && cf.ResourceVersion == fresh.ResourceVersion {
				if errdefs.IsNotFound(rerr) && !rok {
					return fresh.Status.Counter, -1
				}
				if rerr == nil && rok && crs.ResourceVersion == rs.ResourceVersion {
					return fresh.Status.Counter, *rs.Spec.Replicas
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("caches did not catch up within 30s (func %v, replicaset %v)", ferr, rerr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	syncOnce := func() (int, int32) {
		t.Helper()
		settle()
		if err := ctl.sync(ctx, key); err != nil {
			t.Fatalf("sync: %v", err)
		}
		return settle()
	}
	tick := func() (int, int32) {
		t.Helper()
		cached, ok := ctl.funcs.Lister().Get("default", "fn")
		if !ok {
			t.Fatal("func not in the cache")
		}
		if err := ctl.decay(ctx, cached); err != nil {
			t.Fatalf("decay: %v", err)
		}
		return settle()
	}

	counter, replicas := syncOnce()
	for i := 0; i < 3 && (counter != 3 || replicas != 3); i++ {
		counter, replicas = syncOnce() // the first sync also writes the service address back
	}
	if counter != 3 || replicas != 3 {
		t.Fatalf("pool made with counter %d, replicas %d; want 3, 3", counter, replicas)
	}

	// No sync runs: many ticks take the counter one step down, no further.
	for i := 0; i < 5; i++ {
		counter, replicas = tick()
		if int(replicas)-counter > 1 {
			t.Fatalf("tick %d without a sync: counter %d is %d steps below replicas %d",
				i+1, counter, int(replicas)-counter, replicas)
		}
	}
	if counter != 2 || replicas != 3 {
		t.Fatalf("after ticks without a sync: counter %d, replicas %d; want 2, 3", counter, replicas)
	}

	// Syncs and ticks in turn: every step down to the minimum, then no more.
	seen := []int32{replicas}
	for i := 0; i < 10; i++ {
		if _, replicas = syncOnce(); replicas != seen[len(seen)-1] {
			seen = append(seen, replicas)
		}
		tick()
		tick()
	}
	if want := []int32{3, 2, 1, 0}; !slices.Equal(seen, want) {
		t.Fatalf("replicas went %v, want %v", seen, want)
	}
	if counter, _ = settle(); counter != 0 {
		t.Fatalf("counter %d, want the minimum 0", counter)
	}
}

// A runner's report of a call waiting on a function at zero raises the
// counter and the ReplicaSet on the Lease event, with no timer involved;
// calls it reports started raise the counter, each once, up to max.
func TestRunnerDemandRaisesTheCounter(t *testing.T) {
	c := startAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctl := New(c, cache.NewFactory(c), Config{ScaleInterval: time.Hour, IdleWindow: time.Hour})
	done := make(chan struct{})
	go func() { defer close(done); ctl.Run(ctx, 2) }()
	defer func() { cancel(); <-done }()

	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: api.FuncAPIVersionV2}, ObjectMeta: api.ObjectMeta{Name: "fn"},
		Spec: api.FuncSpec{Name: "fn", Function: base64.StdEncoding.EncodeToString([]byte("def run(arg):\n    return arg\n")),
			MinInstanceNum: ptr(0), InitInstanceNum: ptr(0), MaxInstanceNum: ptr(3), ContainerConcurrency: ptr(1)}}
	if _, err := c.Funcs("default").Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	rsName := function.ObjectName("fn")
	// waitFor polls until the func's counter and its ReplicaSet's replicas are want.
	waitFor := func(what string, want int, stamped bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, ferr := c.Funcs("default").Get(ctx, "fn")
			rs, rerr := c.ReplicaSets("default").Get(ctx, rsName)
			if ferr == nil && rerr == nil && got.Status.ReplicaSetUID == rs.UID && got.Status.Counter == want &&
				*rs.Spec.Replicas == int32(want) && (got.Status.TimeStamp != nil) == stamped {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: func %+v (%v), replicaset %+v (%v); want counter and replicas %d", what, got, ferr, rs, rerr, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("pool at zero", 0, false)

	now := time.Now()
	l := runnerLease(t, "r1", now, now, map[string]function.FuncDemand{"default/fn": {InFlight: 1, Peak: 1, Waiting: 1}})
	l, err := c.Leases(function.RunnerNamespace).Create(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	waitFor("a call waiting at zero", 1, false)

	// Three calls started (the first the one that waited): 1 + 3, up to max 3.
	now = time.Now()
	next := runnerLease(t, "r1", l.Spec.AcquireTime.Time, now, map[string]function.FuncDemand{"default/fn": {Started: 3, InFlight: 1, Peak: 1}})
	next.ResourceVersion = l.ResourceVersion
	if _, err := c.Leases(function.RunnerNamespace).Update(ctx, next); err != nil {
		t.Fatal(err)
	}
	waitFor("three calls started", 3, true)
}
