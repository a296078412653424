package workqueue

import (
	"context"
	"sync"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/errdefs"
)

// SyncFunc brings the state named by key to what it should be. It must be
// idempotent: it runs again after an error and whenever the key is added.
type SyncFunc func(ctx context.Context, key string) error

// Run hands keys of q to workers goroutines calling fn until ctx ends,
// then shuts q down and waits for the workers. A failed sync is retried
// with the key's back-off; a successful one resets it.
func Run(ctx context.Context, q *Queue, workers int, name string, fn SyncFunc) {
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx, q, name, fn) {
			}
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

func processNext(ctx context.Context, q *Queue, name string, fn SyncFunc) bool {
	key, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(key)
	err := fn(ctx, key)
	switch {
	case err == nil:
		q.Forget(key)
	case ctx.Err() != nil:
		// Shutting down: the sync failed because of it; nothing to retry.
	default:
		l := log.WithError(err).WithFields(log.Fields{"controller": name, "key": key, "retries": q.NumRequeues(key)})
		if errdefs.IsConflict(err) && q.NumRequeues(key) < 3 {
			// Optimistic concurrency at work: the cache was behind.
			l.Debug("sync conflicted, will retry")
		} else {
			l.Warn("sync failed, will retry")
		}
		q.AddRateLimited(key)
	}
	return true
}
