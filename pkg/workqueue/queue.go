// Package workqueue is the queue controllers work from: string keys
// ("namespace/name"), de-duplicated, never handed to two workers at once,
// with per-key exponential back-off for keys whose sync failed.
//
// The contract is client-go's: Get hands out a key and marks it in process;
// Done releases it. A key added while in process is queued again on Done,
// so a change seen during a sync is never lost, and a key is synced by at
// most one worker at a time.
package workqueue

import (
	"sync"
	"time"
)

// Defaults of the per-key back-off.
const (
	DefaultBaseDelay = 5 * time.Millisecond
	DefaultMaxDelay  = 60 * time.Second
)

// Queue is a rate-limited, de-duplicating queue of keys.
type Queue struct {
	baseDelay, maxDelay time.Duration

	mu   sync.Mutex
	cond *sync.Cond
	// order is the FIFO of keys ready to be handed out; every key in it is
	// in dirty and none is in processing.
	order []string
	// dirty: keys that need a sync (queued, or to be queued again on Done).
	dirty map[string]struct{}
	// processing: keys handed out by Get and not yet Done.
	processing map[string]struct{}
	// waiting: the earliest time at which a delayed key is due.
	waiting  map[string]time.Time
	failures map[string]int
	shutdown bool
}

// Option configures a Queue.
type Option func(*Queue)

// WithBackoff sets the first and the largest per-key retry delay.
func WithBackoff(base, max time.Duration) Option {
	return func(q *Queue) {
		q.baseDelay, q.maxDelay = base, max
	}
}

// New returns an empty queue.
func New(opts ...Option) *Queue {
	q := &Queue{
		baseDelay:  DefaultBaseDelay,
		maxDelay:   DefaultMaxDelay,
		dirty:      map[string]struct{}{},
		processing: map[string]struct{}{},
		waiting:    map[string]time.Time{},
		failures:   map[string]int{},
	}
	for _, o := range opts {
		o(q)
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues key unless it is already queued. A key in process is queued
// again when its worker calls Done.
func (q *Queue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
}

func (q *Queue) addLocked(key string) {
	if q.shutdown {
		return
	}
	if _, ok := q.dirty[key]; ok {
		return
	}
	q.dirty[key] = struct{}{}
	if _, ok := q.processing[key]; ok {
		return
	}
	q.order = append(q.order, key)
	q.cond.Signal()
}

// AddAfter queues key once d has passed. Of several pending delays for one
// key the earliest wins.
func (q *Queue) AddAfter(key string, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	due := time.Now().Add(d)
	if cur, ok := q.waiting[key]; ok && !cur.After(due) {
		return
	}
	q.waiting[key] = due
	time.AfterFunc(d, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		// A later, earlier-due AddAfter replaced this one: let its timer act.
		if cur, ok := q.waiting[key]; !ok || !cur.Equal(due) {
			return
		}
		delete(q.waiting, key)
		q.addLocked(key)
	})
}

// AddRateLimited queues key after its back-off, which doubles with every
// call until Forget.
func (q *Queue) AddRateLimited(key string) {
	q.mu.Lock()
	n := q.failures[key]
	q.failures[key] = n + 1
	q.mu.Unlock()
	q.AddAfter(key, q.backoff(n))
}

func (q *Queue) backoff(failures int) time.Duration {
	d := q.baseDelay
	for i := 0; i < failures; i++ {
		d *= 2
		if d >= q.maxDelay {
			return q.maxDelay
		}
	}
	return d
}

// Forget resets key's back-off, after a successful sync.
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, key)
}

// NumRequeues is how many times key was added rate-limited since Forget.
func (q *Queue) NumRequeues(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[key]
}

// Get blocks until a key is ready and marks it in process; shutdown is true
// once the queue is shut down.
func (q *Queue) Get() (key string, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.order) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if q.shutdown {
		return "", true
	}
	key = q.order[0]
	q.order[0] = ""
	q.order = q.order[1:]
	q.processing[key] = struct{}{}
	delete(q.dirty, key)
	return key, false
}

// Done releases a key handed out by Get; if it was added meanwhile it is
// queued again.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if _, ok := q.dirty[key]; ok {
		q.order = append(q.order, key)
		q.cond.Signal()
	}
}

// Len is the number of keys ready to be handed out.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order)
}

// ShutDown stops the queue: Add becomes a no-op and Get returns shutdown at
// once. Keys still queued are dropped: controllers are level-triggered and
// see the same state again when they start next.
func (q *Queue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	q.cond.Broadcast()
}

// ShuttingDown reports whether ShutDown was called.
func (q *Queue) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}
