package apiserver

import (
	"context"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// recordWriter stores the records of synchronous calls after their caller
// got the answer: the caller never waits on the store's fsync. Until its
// record is stored, an instance is served from memory, so GET by id
// answers as soon as the call has. Writes run on a few workers at once;
// etcd commits concurrent writes in one fsync.
type recordWriter struct {
	instances *registry
	workers   int

	mu      sync.Mutex
	pending map[string]*api.FuncInstance // namespace/name → record not yet stored
	queue   chan *api.FuncInstance
}

// recordQueue bounds the records waiting for a worker; beyond it, callers
// wait (backpressure, never loss).
const recordQueue = 4096

func newRecordWriter(instances *registry, workers int) *recordWriter {
	return &recordWriter{instances: instances, workers: workers, pending: map[string]*api.FuncInstance{},
		queue: make(chan *api.FuncInstance, recordQueue)}
}

// add queues a finished instance's record; it waits only when the queue is full.
func (w *recordWriter) add(ctx context.Context, inst *api.FuncInstance) {
	w.mu.Lock()
	w.pending[instanceKey(inst.Namespace, inst.Name)] = inst
	w.mu.Unlock()
	if ctx.Err() == nil {
		select {
		case w.queue <- inst:
			return
		case <-ctx.Done():
		}
	}
	// The server is stopping (the workers may be gone): store it now
	// rather than lose it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	w.store(sctx, inst)
}

// get returns a record not stored yet.
func (w *recordWriter) get(ns, id string) (*api.FuncInstance, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	inst, ok := w.pending[instanceKey(ns, id)]
	return inst, ok
}

// run stores queued records until ctx ends, then stores what is left.
func (w *recordWriter) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range w.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case inst := <-w.queue:
					w.store(ctx, inst)
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Wait()
	// Drain on a detached context: records accepted before the stop are
	// written while the store still answers.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for {
		select {
		case inst := <-w.queue:
			w.store(dctx, inst)
		default:
			return
		}
	}
}

func (w *recordWriter) store(ctx context.Context, inst *api.FuncInstance) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := w.instances.create(ctx, inst.Namespace, copyObject(w.instances.res, inst))
		if err == nil || errdefs.IsAlreadyExists(err) || attempt == recordAttempts || ctx.Err() != nil {
			if err != nil && !errdefs.IsAlreadyExists(err) {
				log.WithError(err).WithField("instance", inst.Name).Warn("function call: storing the record of a synchronous call failed")
			}
			break
		}
		sleepCtx(ctx, backoff)
		backoff *= 2
	}
	w.mu.Lock()
	delete(w.pending, instanceKey(inst.Namespace, inst.Name))
	w.mu.Unlock()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
