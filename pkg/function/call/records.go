package call

import (
	"context"
	"errors"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
)

// Records stores the records of calls after their caller got the answer:
// the synchronous calls of the function API (in the apiserver) and those
// of the function gateway (in a runner). The caller never waits on the
// store's fsync. Until its record is stored, an instance is served from
// memory (Get), so a read by id answers as soon as the call has. Records
// go in batches: one write of many records costs about what one does.
type Records struct {
	sink RecordSink
	opts RecordOptions

	mu      sync.Mutex
	pending map[string]*api.FuncInstance // namespace/name → record not yet stored
	queue   chan *api.FuncInstance
}

// RecordSink is where records are stored.
type RecordSink interface {
	// CreateMany stores records in as few writes as it can; an error
	// says none may have been stored (each is then stored alone). A
	// record the store refuses on its own is the sink's to report.
	CreateMany(ctx context.Context, batch []*api.FuncInstance) error
	// Create stores one record.
	Create(ctx context.Context, inst *api.FuncInstance) error
}

// RecordOptions tune a Records; zero fields take the defaults.
type RecordOptions struct {
	// Workers write batches at once (default 1); etcd commits
	// concurrent writes in one fsync.
	Workers int
	// BatchBytes bounds a batch's records, roughly, as RecordSize counts
	// them (default 256 KiB); a record alone may be larger: it goes alone.
	BatchBytes int
	// Linger is how long a batch waits for more records (default 5 ms).
	Linger time.Duration
}

const (
	// recordBatch bounds the records of one batch (etcd's default limit
	// on operations in one transaction is 128).
	recordBatch = 128
	// recordQueue bounds the records waiting for a worker; beyond it,
	// callers wait (backpressure, never loss).
	recordQueue = 4096
	// recordAttempts bounds the writes of one record.
	recordAttempts = 5
	// recordWriteTimeout bounds the writes of one batch, retries included.
	recordWriteTimeout = 5 * time.Second
)

// NewRecords returns a writer into sink; Run writes.
func NewRecords(sink RecordSink, o RecordOptions) *Records {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 256 << 10
	}
	if o.Linger <= 0 {
		o.Linger = 5 * time.Millisecond
	}
	return &Records{sink: sink, opts: o, pending: map[string]*api.FuncInstance{}, queue: make(chan *api.FuncInstance, recordQueue)}
}

func recordKey(ns, name string) string { return ns + "/" + name }

// Add queues an ended call's record; it waits only when the queue is full.
func (w *Records) Add(ctx context.Context, inst *api.FuncInstance) {
	w.mu.Lock()
	w.pending[recordKey(inst.Namespace, inst.Name)] = inst
	w.mu.Unlock()
	if ctx.Err() == nil {
		select {
		case w.queue <- inst:
			return
		case <-ctx.Done():
		}
	}
	// The caller left or the server is stopping (the workers may be
	// gone): store it now rather than lose it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWriteTimeout)
	defer cancel()
	w.store(sctx, []*api.FuncInstance{inst})
}

// Get returns a record not stored yet.
func (w *Records) Get(ns, name string) (*api.FuncInstance, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	inst, ok := w.pending[recordKey(ns, name)]
	return inst, ok
}

// Run stores queued records until ctx ends, then stores what is left.
func (w *Records) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range w.opts.Workers {
		wg.Go(func() {
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
		})
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

// batch takes the records queued behind first, waiting up to Linger for
// more, up to a batch.
func (w *Records) batch(first *api.FuncInstance) []*api.FuncInstance {
	out := []*api.FuncInstance{first}
	size := RecordSize(first)
	linger := time.NewTimer(w.opts.Linger)
	defer linger.Stop()
	for len(out) < recordBatch && size < w.opts.BatchBytes {
		select {
		case inst := <-w.queue:
			out = append(out, inst)
			size += RecordSize(inst)
		case <-linger.C:
			return out
		}
	}
	return out
}

// RecordSize is about how many bytes a record takes as JSON.
func RecordSize(inst *api.FuncInstance) int {
	n := 2048 + len(inst.Spec.Arg) + len(inst.Status.Result) + len(inst.Status.Error)
	for _, s := range inst.Status.Steps {
		n += 512 + len(s.Arg) + len(s.Result) + len(s.Output) + len(s.Error)
	}
	return n + 256*len(inst.Status.Trace)
}

// store writes records in one write; when that fails (one of them exists,
// or together they are too large) each is written alone.
func (w *Records) store(ctx context.Context, batch []*api.FuncInstance) {
	defer func() {
		w.mu.Lock()
		for _, inst := range batch {
			delete(w.pending, recordKey(inst.Namespace, inst.Name))
		}
		w.mu.Unlock()
	}()
	if len(batch) > 1 {
		err := w.sink.CreateMany(ctx, batch)
		if err == nil {
			return
		}
		if !errdefs.IsTooLarge(err) {
			log.WithError(err).WithField("records", len(batch)).Warn("function call: storing a batch of records failed; storing them one by one")
		}
	}
	for _, inst := range batch {
		w.StoreNow(ctx, inst)
	}
}

// StoreNow writes one record at once, trying again a while; a record
// that exists already is stored.
func (w *Records) StoreNow(ctx context.Context, inst *api.FuncInstance) {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := w.sink.Create(ctx, inst)
		if err == nil || errdefs.IsAlreadyExists(err) {
			return
		}
		log.WithError(err).WithField("instance", inst.Name).Warn("function call: storing the record of a call failed")
		if attempt == recordAttempts || errdefs.IsInvalid(err) || errdefs.IsForbidden(err) ||
			errors.Is(err, errdefs.ErrBadRequest) || ctx.Err() != nil {
			return
		}
		wait.Sleep(ctx, backoff)
		backoff = min(2*backoff, time.Second)
	}
}
