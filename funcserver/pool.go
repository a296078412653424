package funcserver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/wait"
)

const (
	restartBackoffMin = 200 * time.Millisecond
	restartBackoffMax = 30 * time.Second
)

// pool holds the workers. A worker serves one call at a time; a worker that
// died or was killed is replaced in the background by a fresh import.
type pool struct {
	spec workerSpec
	size int
	// idle holds the idle workers, the one that served last on top: under
	// light load one worker keeps serving with warm caches (round the pool,
	// each call found its worker's caches cold, and a warm call took 1.6×
	// as long), and the others stay paged out until load needs them.
	// idleCount has a token per idle worker, so acquire can wait on it.
	idleMu    sync.Mutex
	idle      []*worker
	idleCount chan struct{}

	// ctx bounds replacements; it is independent of Run's context so that
	// calls still draining after SIGTERM get replaced workers.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	closed     bool
	live       int
	restartErr error

	starts atomic.Int64
}

func newPool(spec workerSpec, size int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &pool{spec: spec, size: size, idleCount: make(chan struct{}, size), ctx: ctx, cancel: cancel}
}

// start imports the function in all workers at once; any failure stops the
// workers already started and is returned.
func (p *pool) start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		w   *worker
		err error
	}
	results := make(chan result, p.size)
	for i := 0; i < p.size; i++ {
		go func() {
			w, err := startWorker(ctx, p.spec)
			if err != nil {
				cancel()
			}
			results <- result{w, err}
		}()
	}
	var started []*worker
	var firstErr error
	for i := 0; i < p.size; i++ {
		r := <-results
		switch {
		case r.err == nil:
			started = append(started, r.w)
		case firstErr == nil || errors.Is(firstErr, context.Canceled):
			firstErr = r.err
		}
	}
	if firstErr != nil {
		for _, w := range started {
			w.kill()
		}
		return firstErr
	}
	p.mu.Lock()
	p.live = len(started)
	p.mu.Unlock()
	p.starts.Add(int64(len(started)))
	for _, w := range started {
		log.WithField("pid", w.pid).Debug("worker imported function.py")
		p.putIdle(w)
	}
	return nil
}

// acquire takes an idle live worker, waiting until ctx ends.
func (p *pool) acquire(ctx context.Context) (*worker, error) {
	for {
		select {
		case <-p.idleCount:
			w := p.popIdle()
			if w.alive() {
				return w, nil
			}
			// It died while idle, e.g. a thread of the function exited it.
			log.WithFields(log.Fields{"pid": w.pid, "status": w.waitErr}).Warn("idle worker exited, replacing it")
			w.kill()
			p.replace()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// release gives a worker back, or replaces it if it is dead.
func (p *pool) release(w *worker) {
	if w.alive() {
		p.putIdle(w)
		return
	}
	p.replace()
}

// putIdle pushes w on the idle stack; never blocks, as at most size
// workers are idle.
func (p *pool) putIdle(w *worker) {
	p.idleMu.Lock()
	p.idle = append(p.idle, w)
	p.idleMu.Unlock()
	p.idleCount <- struct{}{}
}

// popIdle takes the worker on top of the idle stack; the caller holds one
// of idleCount's tokens, so there is one.
func (p *pool) popIdle() *worker {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	w := p.idle[len(p.idle)-1]
	p.idle[len(p.idle)-1] = nil
	p.idle = p.idle[:len(p.idle)-1]
	return w
}

// replace starts a fresh worker in place of a dead one, retrying with
// back-off while imports fail.
func (p *pool) replace() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live--
	if p.closed {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		backoff := restartBackoffMin
		for {
			w, err := startWorker(p.ctx, p.spec)
			if err == nil {
				p.mu.Lock()
				if p.closed {
					p.mu.Unlock()
					w.stop()
					return
				}
				p.live++
				p.restartErr = nil
				p.mu.Unlock()
				p.starts.Add(1)
				log.WithField("pid", w.pid).Info("replacement worker imported function.py")
				p.putIdle(w)
				return
			}
			if p.ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			p.restartErr = err
			p.mu.Unlock()
			log.WithError(err).WithField("retryIn", backoff).Error("replacement worker failed to start")
			if !wait.Sleep(p.ctx, backoff) {
				return
			}
			backoff = min(2*backoff, restartBackoffMax)
		}
	}()
}

// health reports the live workers and, when none is live and replacements
// fail, why.
func (p *pool) health() (live int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live == 0 && p.restartErr != nil {
		return 0, p.restartErr
	}
	return p.live, nil
}

// close stops replacements and all idle workers. Callers make sure no call
// is in flight.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	var wg sync.WaitGroup
	for {
		select {
		case <-p.idleCount:
			w := p.popIdle()
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.stop()
			}()
		default:
			wg.Wait()
			return
		}
	}
}
