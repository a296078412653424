package apiserver

import (
	"context"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
)

// callCounter batches the seed's per-call counter increments: calls add to
// an in-memory tally and one status write per function carries them, so a
// burst of calls costs one etcd write per flush, not one per call.
type callCounter struct {
	funcs    *registry
	interval time.Duration

	mu      sync.Mutex
	pending map[string]int // namespace/name → calls not yet written
	kick    chan struct{}
}

func newCallCounter(funcs *registry, interval time.Duration) *callCounter {
	return &callCounter{funcs: funcs, interval: interval, pending: map[string]int{}, kick: make(chan struct{}, 1)}
}

// add counts a call; urgent asks for the write now (a cold start is waiting
// for the replicas to follow).
func (c *callCounter) add(ns, name string, urgent bool) {
	c.mu.Lock()
	c.pending[ns+"/"+name]++
	c.mu.Unlock()
	if urgent {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

func (c *callCounter) run(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// Last flush on a detached context: the counts are hints for
			// scaling, worth writing if the store still answers.
			fctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			c.flush(fctx)
			cancel()
			return
		case <-t.C:
		case <-c.kick:
		}
		c.flush(ctx)
	}
}

func (c *callCounter) flush(ctx context.Context) {
	c.mu.Lock()
	batch := c.pending
	c.pending = map[string]int{}
	c.mu.Unlock()
	for key, n := range batch {
		ns, name := splitKey(key)
		_, err := c.funcs.mutate(ctx, ns, name, func(cur api.Object) (api.Object, error) {
			f := cur.(*api.Func)
			_, _, max := validation.FuncBounds(&f.Spec)
			f.Status.Counter = min(f.Status.Counter+n, max)
			now := time.Now().UTC()
			f.Status.TimeStamp = &now
			return f, nil
		})
		if err != nil {
			log.WithError(err).WithField("func", key).Debug("call counter: write failed")
		}
	}
}

func splitKey(key string) (ns, name string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}
