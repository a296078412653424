package apiserver

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"minik8s/pkg/errdefs"
)

// What watches may hold in the server, per client: a watch whose client
// stops reading must not grow the server. Kubernetes' cacher cuts off a
// watcher that falls behind; here the bound is in bytes as well, since a
// few large objects weigh more than thousands of small ones.
const (
	// DefaultMaxWatchesPerClient bounds the watches one client holds open.
	DefaultMaxWatchesPerClient = 256
	// DefaultMaxWatchBytes bounds what one watch holds: the events queued
	// for it, the part of its initial list read and not yet sent, and the
	// event being written.
	DefaultMaxWatchBytes = 16 << 20
	// DefaultMaxWatchBytesPerClient bounds the same across all the
	// watches of one client.
	DefaultMaxWatchBytesPerClient = 48 << 20
)

// watchLimiter counts the watches each client holds open and the bytes
// they hold.
type watchLimiter struct {
	max                 int
	maxBytes, maxClient int64

	// cutOff counts the watches ended for what they held
	// (apiserver_watches_cut_off_total).
	cutOff prometheus.Counter

	mu      sync.Mutex
	clients map[string]*watchClient
}

// watchClient is what one client's watches hold.
type watchClient struct {
	watches int
	bytes   int64
	// pages lets one of the client's watches at a time read a page of
	// its initial list: a page is counted once read, so that many watches
	// starting at once cannot each hold one uncounted.
	pages sync.Mutex
}

func newWatchLimiter(max int, maxBytes, maxClient int64) *watchLimiter {
	return &watchLimiter{max: max, maxBytes: maxBytes, maxClient: maxClient, clients: map[string]*watchClient{},
		cutOff: prometheus.NewCounter(prometheus.CounterOpts{Name: "apiserver_watches_cut_off_total",
			Help: "Watches ended because they held more than their bound (their clients resume)."})}
}

// acquire takes a watch for client; its release must follow. Beyond the
// cap it fails with 429.
func (l *watchLimiter) acquire(client string) (*watchBudget, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	wc := l.clients[client]
	if wc == nil {
		wc = &watchClient{}
		l.clients[client] = wc
	}
	if l.max > 0 && wc.watches >= l.max {
		return nil, fmt.Errorf("%s holds %d watches open, the most one client may: %w", client, wc.watches, errdefs.ErrTooManyRequests)
	}
	wc.watches++
	return &watchBudget{l: l, client: client, wc: wc}, nil
}

// watchBudget is one watch's share of the bounds. A nil budget bounds
// nothing (the apiserver's own watches).
type watchBudget struct {
	l      *watchLimiter
	client string
	wc     *watchClient
	held   int64 // under l.mu
	done   bool
}

// take counts n more bytes held for the watch; false, with nothing taken,
// when that would pass the watch's bound or its client's: the watch must
// end then (its client resumes from the last version it got). A watch
// holding nothing may take one event whatever its size, and so may a
// client holding nothing, so that one large object never stalls a watch
// for good; the bounds hold give or take one event.
func (b *watchBudget) take(n int64) bool {
	if b == nil {
		return true
	}
	l := b.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if b.done {
		return false
	}
	if (l.maxBytes > 0 && b.held > 0 && b.held+n > l.maxBytes) ||
		(l.maxClient > 0 && b.wc.bytes > 0 && b.wc.bytes+n > l.maxClient) {
		l.cutOff.Inc()
		return false
	}
	b.held += n
	b.wc.bytes += n
	return true
}

// give hands back n bytes taken.
func (b *watchBudget) give(n int64) {
	if b == nil {
		return
	}
	b.l.mu.Lock()
	defer b.l.mu.Unlock()
	if b.done {
		return
	}
	n = min(n, b.held)
	b.held -= n
	b.wc.bytes -= n
}

// release ends the watch: what it held and its place are given back.
func (b *watchBudget) release() {
	if b == nil {
		return
	}
	l := b.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	b.wc.bytes -= b.held
	b.held = 0
	if b.wc.watches--; b.wc.watches <= 0 {
		delete(l.clients, b.client)
	}
}

// readPage runs read, one page read of the client's at a time.
func (b *watchBudget) readPage(read func()) {
	if b == nil {
		read()
		return
	}
	b.wc.pages.Lock()
	defer b.wc.pages.Unlock()
	read()
}
