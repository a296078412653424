package apiserver

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/pkg/api"
)

// Requests that come together read a kubelet once; a second later it is
// read again; a caller that gives up does not end the read for the others.
func TestSummaryCacheSharesReads(t *testing.T) {
	c := newSummaryCache()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	c.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var reads atomic.Int32
	release := make(chan struct{})
	read := func(ctx context.Context) (api.Summary, error) {
		reads.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return api.Summary{}, ctx.Err()
		}
		return api.Summary{Node: api.NodeStats{NodeName: "n1"}}, nil
	}

	gaveUp, cancel := context.WithCancel(context.Background())
	gaveUpErr := make(chan error, 1)
	go func() { _, err := c.get(gaveUp, "uid-1", read); gaveUpErr <- err }()
	var wg sync.WaitGroup
	results := make(chan string, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, err := c.get(context.Background(), "uid-1", read)
			if err != nil {
				t.Error(err)
			}
			results <- sum.Node.NodeName
		}()
	}
	cancel()
	if err := <-gaveUpErr; err != context.Canceled {
		t.Fatalf("caller that gave up: %v, want context.Canceled", err)
	}
	close(release)
	wg.Wait()
	close(results)
	for name := range results {
		if name != "n1" {
			t.Fatalf("summary of %q, want n1", name)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads of the kubelet, want 1", n)
	}

	if _, err := c.get(context.Background(), "uid-1", read); err != nil || reads.Load() != 1 {
		t.Fatalf("within the fresh period: %v, %d reads, want the same one", err, reads.Load())
	}
	mu.Lock()
	now = now.Add(summaryFresh)
	mu.Unlock()
	if _, err := c.get(context.Background(), "uid-2", read); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	_, kept := c.entries["uid-1"]
	c.mu.Unlock()
	if kept {
		t.Fatal("a stale summary of a node nobody asks for is kept")
	}
	if _, err := c.get(context.Background(), "uid-1", read); err != nil || reads.Load() != 3 {
		t.Fatalf("after the fresh period: %v, %d reads, want 3", err, reads.Load())
	}
}
