package workqueue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAddDeduplicates(t *testing.T) {
	q := New()
	q.Add("a")
	q.Add("b")
	q.Add("a")
	if n := q.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	for _, want := range []string{"a", "b"} {
		k, shut := q.Get()
		if shut || k != want {
			t.Fatalf("Get = %q, %v; want %q", k, shut, want)
		}
		q.Done(k)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("Len after draining = %d", n)
	}
}

func TestKeyAddedWhileProcessingIsQueuedOnDone(t *testing.T) {
	q := New()
	q.Add("a")
	k, _ := q.Get()
	q.Add("a")
	q.Add("a")
	if n := q.Len(); n != 0 {
		t.Fatalf("a key in process was handed out again: Len = %d", n)
	}
	q.Done(k)
	if n := q.Len(); n != 1 {
		t.Fatalf("Len after Done = %d, want 1", n)
	}
	k, _ = q.Get()
	q.Done(k)
	if n := q.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

// Many workers on few keys: no key is ever in two workers at once, and
// every key added is synced after its last Add.
func TestNoKeyInTwoWorkers(t *testing.T) {
	q := New()
	var mu sync.Mutex
	inFlight := map[string]bool{}
	var violations, syncs atomic.Int64
	lastAdd := map[string]int64{}
	lastSeen := map[string]int64{}
	var clock atomic.Int64

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Run(ctx, q, 8, "test", func(ctx context.Context, key string) error {
			mu.Lock()
			if inFlight[key] {
				violations.Add(1)
			}
			inFlight[key] = true
			lastSeen[key] = clock.Add(1)
			mu.Unlock()
			time.Sleep(100 * time.Microsecond)
			mu.Lock()
			inFlight[key] = false
			mu.Unlock()
			syncs.Add(1)
			return nil
		})
		close(done)
	}()
	keys := []string{"a", "b", "c"}
	for i := 0; i < 3000; i++ {
		k := keys[i%len(keys)]
		mu.Lock()
		lastAdd[k] = clock.Add(1)
		mu.Unlock()
		q.Add(k)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		ok := true
		for _, k := range keys {
			if lastSeen[k] < lastAdd[k] {
				ok = false
			}
		}
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys not synced after their last Add: added %v, seen %v", lastAdd, lastSeen)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d times a key was synced by two workers at once", v)
	}
	if s := syncs.Load(); s >= 3000 {
		t.Fatalf("%d syncs for 3000 adds of 3 keys: adds were not de-duplicated", s)
	}
}

func TestBackoffDoublesAndForgetResets(t *testing.T) {
	q := New(WithBackoff(time.Millisecond, 8*time.Millisecond))
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{0, time.Millisecond}, {1, 2 * time.Millisecond}, {2, 4 * time.Millisecond},
		{3, 8 * time.Millisecond}, {4, 8 * time.Millisecond}, {40, 8 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := q.backoff(tt.failures); got != tt.want {
			t.Errorf("backoff(%d) = %v, want %v", tt.failures, got, tt.want)
		}
	}
	for i := 0; i < 3; i++ {
		q.AddRateLimited("k")
	}
	if n := q.NumRequeues("k"); n != 3 {
		t.Fatalf("NumRequeues = %d, want 3", n)
	}
	q.Forget("k")
	if n := q.NumRequeues("k"); n != 0 {
		t.Fatalf("NumRequeues after Forget = %d", n)
	}
}

func TestAddAfter(t *testing.T) {
	q := New()
	q.AddAfter("late", time.Hour)
	added := time.Now()
	q.AddAfter("k", 300*time.Millisecond)
	q.AddAfter("k", 10*time.Second) // later than the pending one: ignored
	// (A test stalled past k's delay cannot tell "at once" from "on time".)
	if n := q.Len(); n != 0 && time.Since(added) < 300*time.Millisecond {
		t.Fatalf("a delayed key is ready at once: Len = %d", n)
	}
	k, _ := q.Get()
	if k != "k" {
		t.Fatalf("Get = %q, want k", k)
	}
	q.Done(k)
	// late, an hour away, was not handed out with k.
	if n := q.Len(); n != 0 {
		t.Fatalf("Len = %d after k, want 0", n)
	}
	// An earlier AddAfter replaces a later one.
	q.AddAfter("late", time.Millisecond)
	k, _ = q.Get()
	if k != "late" {
		t.Fatalf("Get = %q, want late", k)
	}
}

func TestShutDownWakesGetters(t *testing.T) {
	q := New()
	got := make(chan bool)
	go func() {
		_, shut := q.Get()
		got <- shut
	}()
	time.Sleep(10 * time.Millisecond)
	q.ShutDown()
	select {
	case shut := <-got:
		if !shut {
			t.Fatal("Get after ShutDown did not report shutdown")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get still blocked after ShutDown")
	}
	q.Add("x")
	if q.Len() != 0 || !q.ShuttingDown() {
		t.Fatal("Add after ShutDown queued a key")
	}
}

func TestRunRetriesFailedSyncs(t *testing.T) {
	q := New(WithBackoff(time.Millisecond, 10*time.Millisecond))
	var calls atomic.Int64
	ok := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		Run(ctx, q, 2, "test", func(ctx context.Context, key string) error {
			if calls.Add(1) < 4 {
				return errors.New("not yet")
			}
			close(ok)
			return nil
		})
		close(done)
	}()
	q.Add("k")
	select {
	case <-ok:
	case <-time.After(30 * time.Second):
		t.Fatalf("sync not retried to success; %d calls", calls.Load())
	}
	cancel()
	<-done
	if n := q.NumRequeues("k"); n != 0 {
		t.Fatalf("back-off not reset after success: %d", n)
	}
}
