package wait

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestEveryRunsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, 5*time.Millisecond, func() {
			if n.Add(1) == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("fn ran %d times, want 3 (none after the cancel)", got)
	}
}

func TestEveryWaitsOnePeriodFirst(t *testing.T) {
	// The context is live when Every starts and ends well before the first
	// period (an hour): an Every that ran fn at once would have run it.
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Hour, func() { n.Add(1) })
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	if got := n.Load(); got != 0 {
		t.Fatalf("fn ran %d times before the first period passed, want 0", got)
	}
}

func TestEveryRunsAfterOnePeriod(t *testing.T) {
	// The counterpart: with a live context Every does not just return, it
	// runs fn once a period has passed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, 20*time.Millisecond, func() {
			select {
			case ran <- struct{}{}:
			default:
			}
		})
	}()
	select {
	case <-ran:
	case <-done:
		t.Fatal("Every returned while its context was live")
	case <-time.After(10 * time.Second):
		t.Fatal("fn did not run within 10s with a 20ms period")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if !Sleep(ctx, time.Millisecond) || !Sleep(ctx, 0) {
		t.Fatal("Sleep on a live context reported it ended")
	}
	cancel()
	// An ended context wins even over a wait that is already due.
	if Sleep(ctx, 0) || Sleep(ctx, -time.Second) || Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on an ended context reported it waited")
	}
}
