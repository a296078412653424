package apiserver

import (
	"context"
	"sync"
	"time"

	"minik8s/pkg/api"
)

// summaryFresh is how long a kubelet's summary is reused. Kubelets read
// their cgroups every few seconds (10 s by default), so a summary a
// second old is as new as a fresh one; requests that come together (the
// dashboard asks for nodes and pods at once, an HPA and kubectl top) read
// each kubelet once.
const summaryFresh = time.Second

// summaryCache holds each node's last summary, or the read under way, so
// that concurrent requests wait for one read rather than making their own.
type summaryCache struct {
	mu      sync.Mutex
	entries map[string]*summaryRead // by node UID
	now     func() time.Time
}

type summaryRead struct {
	done chan struct{} // closed when sum and err are set
	at   time.Time     // when the read began
	sum  api.Summary
	err  error
}

func newSummaryCache() *summaryCache {
	return &summaryCache{entries: map[string]*summaryRead{}, now: time.Now}
}

// get returns the summary of the node keyed key, reading it with read
// unless a read began less than summaryFresh ago. The read outlives a
// caller that gives up (others may wait for it) but not summaryTimeout.
func (c *summaryCache) get(ctx context.Context, key string, read func(context.Context) (api.Summary, error)) (api.Summary, error) {
	c.mu.Lock()
	now := c.now()
	r, ok := c.entries[key]
	if !ok || now.Sub(r.at) >= summaryFresh {
		r = &summaryRead{done: make(chan struct{}), at: now}
		c.entries[key] = r
		c.forgetStale(now)
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), summaryTimeout)
			defer cancel()
			r.sum, r.err = read(rctx)
			close(r.done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.sum, r.err
	case <-ctx.Done():
		return api.Summary{}, ctx.Err()
	}
}

// forgetStale drops finished reads older than summaryFresh (nodes that
// went away leave nothing behind). Called with mu held.
func (c *summaryCache) forgetStale(now time.Time) {
	for k, r := range c.entries {
		select {
		case <-r.done:
			if now.Sub(r.at) >= summaryFresh {
				delete(c.entries, k)
			}
		default:
		}
	}
}
