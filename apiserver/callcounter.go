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
	// cold holds functions that calls are waiting on: their counter must
	// be at least one whatever else wrote it meanwhile (a decay, say).
	cold map[string]bool
	kick chan struct{}
}

func newCallCounter(funcs *registry, interval time.Duration) *callCounter {
	return &callCounter{funcs: funcs, interval: interval, pending: map[string]int{}, cold: map[string]bool{},
		kick: make(chan struct{}, 1)}
}

// add counts a call; urgent asks for the write now (a cold start is waiting
// for the replicas to follow).
func (c *callCounter) add(ns, name string, urgent bool) {
	c.mu.Lock()
	c.pending[ns+"/"+name]++
	if urgent {
		c.cold[ns+"/"+name] = true
	}
	c.mu.Unlock()
	if urgent {
		c.flushSoon()
	}
}

// needOne says a call still waits for a pod of the function: the next
// flush makes sure its counter is at least one.
func (c *callCounter) needOne(ns, name string) {
	c.mu.Lock()
	c.cold[ns+"/"+name] = true
	c.mu.Unlock()
	c.flushSoon()
}

func (c *callCounter) flushSoon() {
	select {
	case c.kick <- struct{}{}:
	default:
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
	batch, cold := c.pending, c.cold
	c.pending, c.cold = map[string]int{}, map[string]bool{}
	c.mu.Unlock()
	for key := range cold {
		if _, ok := batch[key]; !ok {
			batch[key] = 0
		}
	}
	for key, n := range batch {
		ns, name := splitKey(key)
		_, err := c.funcs.mutate(ctx, ns, name, func(cur api.Object) (api.Object, error) {
			f := cur.(*api.Func)
			_, _, hi := validation.FuncBounds(&f.Spec)
			f.Status.Counter = min(f.Status.Counter+n, hi)
			if cold[key] && f.Status.Counter < 1 {
				f.Status.Counter = 1
			}
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
