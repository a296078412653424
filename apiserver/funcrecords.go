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
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWriteTimeout)
	defer cancel()
	w.store(sctx, []*api.FuncInstance{inst})
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
					// Detached: a batch taken is written even when the
					// server stops meanwhile.
					sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWriteTimeout)
					w.store(sctx, w.batch(inst))
					cancel()
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Wait()
	// Drain on a detached context: records accepted before the stop are
	// written while the store still answers.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWriteTimeout)
	defer cancel()
	for {
		select {
		case inst := <-w.queue:
			w.store(dctx, w.batch(inst))
		default:
			return
		}
	}
}

const (
	// recordBatch bounds the records of one store write (etcd's default
	// limit on operations in one transaction is 128).
	recordBatch = 128
	// recordBatchBytes bounds their data, roughly (etcd's default limit on
	// one request is 1.5 MiB).
	recordBatchBytes = 1 << 20
	// recordLinger is how long a batch waits for more records.
	recordLinger = 10 * time.Millisecond
	// recordWriteTimeout bounds the writes of one batch, retries included.
	recordWriteTimeout = 5 * time.Second
)

// batch takes the records queued behind first, waiting up to recordLinger
// for more, up to a batch: one store write of many records costs about
// what one does, and nobody waits on it (GET serves a pending record from
// memory).
func (w *recordWriter) batch(first *api.FuncInstance) []*api.FuncInstance {
	out := []*api.FuncInstance{first}
	size := recordSize(first)
	linger := time.NewTimer(recordLinger)
	defer linger.Stop()
	for len(out) < recordBatch && size < recordBatchBytes {
		select {
		case inst := <-w.queue:
			out = append(out, inst)
			size += recordSize(inst)
		case <-linger.C:
			return out
		}
	}
	return out
}

// recordSize is about how many bytes a record takes stored.
func recordSize(inst *api.FuncInstance) int {
	n := 512 + len(inst.Spec.Arg) + len(inst.Status.Result) + len(inst.Status.Error)
	for _, st := range inst.Status.Steps {
		n += 256 + len(st.Arg) + len(st.Result) + len(st.Output) + len(st.Error)
	}
	return n
}

// store writes records in one store write; when that fails (one of them
// exists, or together they are too large) each is written alone.
func (w *recordWriter) store(ctx context.Context, batch []*api.FuncInstance) {
	defer func() {
		w.mu.Lock()
		for _, inst := range batch {
			delete(w.pending, instanceKey(inst.Namespace, inst.Name))
		}
		w.mu.Unlock()
	}()
	if len(batch) > 1 {
		objs := make([]api.Object, len(batch))
		for i, inst := range batch {
			objs[i] = writable(inst)
		}
		errs, err := w.instances.createMany(ctx, objs)
		if err == nil {
			for i, e := range errs {
				if e != nil {
					log.WithError(e).WithField("instance", batch[i].Name).Warn("function call: the record of a synchronous call is not valid; not stored")
				}
			}
			return
		}
	}
	for _, inst := range batch {
		w.storeOne(ctx, inst)
	}
}

func (w *recordWriter) storeOne(ctx context.Context, inst *api.FuncInstance) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := w.instances.create(ctx, inst.Namespace, writable(inst))
		if err == nil || errdefs.IsAlreadyExists(err) || attempt == recordAttempts || ctx.Err() != nil {
			if err != nil && !errdefs.IsAlreadyExists(err) {
				log.WithError(err).WithField("instance", inst.Name).Warn("function call: storing the record of a synchronous call failed")
			}
			return
		}
		sleepCtx(ctx, backoff)
		backoff *= 2
	}
}

// writable is a copy of a pending record for the store to set the
// metadata of, while GET may read the record itself: creating sets only
// top-level fields of metadata and status.
func writable(inst *api.FuncInstance) *api.FuncInstance {
	c := *inst
	return &c
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
