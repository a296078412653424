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
	// idleTrim is how long a worker beyond the first may stay idle before
	// it is stopped; trimInterval how often that is looked at.
	idleTrim     = 60 * time.Second
	trimInterval = 10 * time.Second
)

// pool holds the workers. A worker serves one call at a time. The pool
// starts with one and grows on demand, up to size: a call that finds no
// idle worker starts one more (it takes whichever worker comes free
// first), and workers idle for idleTrim are stopped down to one again, so
// an idle pod holds one interpreter, not size. A worker that died or was
// killed is replaced in the background when it was the last; otherwise the
// next call that needs one starts it. Workers are forked from a zygote
// that imported the function once (zygote.go).
type pool struct {
	zyg  *zygote
	size int
	// min workers are kept live: started first, replaced when they die.
	min int
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

	mu     sync.Mutex
	closed bool
	live   int
	// starting counts the workers being started to meet demand, waiting
	// the calls waiting for a worker.
	starting   int
	waiting    int
	restartErr error

	starts atomic.Int64
}

func newPool(spec workerSpec, size int) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &pool{zyg: &zygote{spec: spec}, size: size, min: 1, idleCount: make(chan struct{}, size), ctx: ctx, cancel: cancel}
}

// start imports the function in the first workers; a failure stops the
// workers already started and is returned. Once started, idle workers
// beyond the first are trimmed.
func (p *pool) start(ctx context.Context) error {
	if err := p.startMin(ctx); err != nil {
		return err
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.trimLoop()
	}()
	return nil
}

func (p *pool) startMin(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		w   *worker
		err error
	}
	results := make(chan result, p.min)
	for i := 0; i < p.min; i++ {
		go func() {
			w, err := p.zyg.fork(ctx)
			if err != nil {
				cancel()
			}
			results <- result{w, err}
		}()
	}
	var started []*worker
	var firstErr error
	for i := 0; i < p.min; i++ {
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

// acquire takes an idle live worker, waiting until ctx ends; finding none,
// it starts one more if the pool may grow.
func (p *pool) acquire(ctx context.Context) (*worker, error) {
	for {
		var ok bool
		select {
		case <-p.idleCount:
			ok = true
		default:
			p.mu.Lock()
			p.waiting++
			p.mu.Unlock()
			p.grow()
			select {
			case <-p.idleCount:
				ok = true
			case <-ctx.Done():
			}
			p.mu.Lock()
			p.waiting--
			p.mu.Unlock()
		}
		if !ok {
			return nil, ctx.Err()
		}
		w := p.popIdle()
		if w.alive() {
			return w, nil
		}
		// It died while idle, e.g. a thread of the function exited it.
		log.WithFields(log.Fields{"pid": w.pid, "status": w.waitErr}).Warn("idle worker exited, replacing it")
		w.kill()
		p.replace()
	}
}

// grow starts one more worker in the background unless the pool is at its
// size, counting those being started.
func (p *pool) grow() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.live+p.starting >= p.size {
		return
	}
	p.launch()
}

// launch starts a worker in the background; p.mu is held. One that fails
// to start is tried again, with back-off, while the pool would otherwise
// stay below its minimum (its failure is then the pool's health); an
// extra one is given up, the live workers serving on.
func (p *pool) launch() {
	p.starting++
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		backoff := restartBackoffMin
		for {
			w, err := p.zyg.fork(p.ctx)
			p.mu.Lock()
			if err == nil {
				p.starting--
				if p.closed {
					p.mu.Unlock()
					w.stop()
					return
				}
				p.live++
				p.restartErr = nil
				p.mu.Unlock()
				p.starts.Add(1)
				log.WithField("pid", w.pid).Debug("worker imported function.py")
				p.putIdle(w)
				return
			}
			if p.closed || p.ctx.Err() != nil || p.live+p.starting-1 >= p.min {
				p.starting--
				p.mu.Unlock()
				if p.ctx.Err() == nil {
					log.WithError(err).Error("an extra worker failed to start")
				}
				return
			}
			p.restartErr = err
			p.mu.Unlock()
			log.WithError(err).WithField("retryIn", backoff).Error("replacement worker failed to start")
			if !wait.Sleep(p.ctx, backoff) {
				p.mu.Lock()
				p.starting--
				p.mu.Unlock()
				return
			}
			backoff = min(2*backoff, restartBackoffMax)
		}
	}()
}

// trimLoop stops, every trimInterval, the workers idle for idleTrim beyond
// the pool's minimum, until the pool closes.
func (p *pool) trimLoop() {
	t := time.NewTicker(trimInterval)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			for p.trimOne(time.Now().Add(-idleTrim)) {
			}
		}
	}
}

// trimOne stops the least recently used idle worker if it has been idle
// since before cutoff and the pool has more than its minimum.
func (p *pool) trimOne(cutoff time.Time) bool {
	select {
	case <-p.idleCount:
	default:
		return false
	}
	p.mu.Lock()
	p.idleMu.Lock()
	var w *worker
	if p.live > p.min && len(p.idle) > 0 && p.idle[0].idleSince.Before(cutoff) {
		w = p.idle[0]
		p.idle = append(p.idle[:0], p.idle[1:]...)
		p.live--
	}
	p.idleMu.Unlock()
	p.mu.Unlock()
	if w == nil {
		p.idleCount <- struct{}{}
		return false
	}
	log.WithField("pid", w.pid).Debug("stopping a worker idle for long")
	w.stop()
	return true
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
	w.idleSince = time.Now()
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

// replace counts a worker gone and starts a fresh one when the pool fell
// below its minimum, or when calls wait that the workers being started
// do not cover (they grew the pool for the worker now gone).
func (p *pool) replace() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live--
	if p.closed {
		return
	}
	if p.live+p.starting < p.min || (p.waiting > p.starting && p.live+p.starting < p.size) {
		p.launch()
	}
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
			p.zyg.close()
			return
		}
	}
}
