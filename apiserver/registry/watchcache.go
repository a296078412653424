package registry

import (
	"context"
	"fmt"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
	"minik8s/pkg/wait"
)

// WatchCache follows one resource in the store with a single watch and
// fans its events out to the apiserver's watchers, as kube-apiserver's
// cacher does: each change is decoded once whatever the number of
// watchers, a watcher that resumes from a recent version is served from
// memory, and a watcher that cannot keep up is cut off (it resumes from
// the last version it got) instead of growing the server's memory. The
// last events are kept within a count and a byte budget; a watch from an
// older version goes to the store itself.
type WatchCache struct {
	store  storage.Interface
	prefix string
	newObj storage.NewFunc

	mu sync.Mutex
	// live: the cache follows the store; events in (floor, rev] are all
	// in ring, in order.
	live      bool
	floor     int64
	rev       int64
	ring      []storage.Event
	ringBytes int
	// latest is the newest event of each key in ring, for updates that
	// start from the object a client read (see latestAt).
	latest map[string]storage.Event
	subs   map[*cacheWatcher]struct{}
}

const (
	// watchCacheEvents and watchCacheBytes bound the events kept per resource.
	watchCacheEvents = 4096
	watchCacheBytes  = 32 << 20
	// WatcherBuffer is how many events a watcher may be behind before it
	// is cut off.
	WatcherBuffer = 1024
	// cacheStartWait is how long a watch waits for a cache that is not
	// live before the store serves it.
	cacheStartWait = 2 * time.Second
)

func NewWatchCache(store storage.Interface, prefix string, newObj storage.NewFunc) *WatchCache {
	return &WatchCache{store: store, prefix: prefix, newObj: newObj,
		latest: map[string]storage.Event{}, subs: map[*cacheWatcher]struct{}{}}
}

// cacheWatcher is one watch served by the cache.
type cacheWatcher struct {
	ns   string // "" for every namespace
	from int64  // events after it
	ch   chan storage.Event
}

// Run follows the store until ctx ends, starting again from the store's
// revision whenever its watch breaks.
func (w *WatchCache) Run(ctx context.Context) {
	for ctx.Err() == nil {
		rev, err := w.store.Revision(ctx)
		if err != nil {
			wait.Sleep(ctx, time.Second)
			continue
		}
		events, err := w.store.Watch(ctx, w.prefix, rev, w.newObj)
		if err != nil {
			wait.Sleep(ctx, time.Second)
			continue
		}
		w.start(rev)
		for ev := range events {
			if ev.Type == api.Error {
				log.WithError(ev.Err).WithField("prefix", w.prefix).Debug("watch cache: store watch ended, following again")
				break
			}
			w.add(ev)
		}
		w.stop(fmt.Errorf("the apiserver's watch of %s broke; resume from the last version you saw: %w", w.prefix, errdefs.ErrUnavailable))
		if ctx.Err() == nil {
			wait.Sleep(ctx, 100*time.Millisecond)
		}
	}
	w.stop(fmt.Errorf("the apiserver is stopping: %w", errdefs.ErrUnavailable))
}

func (w *WatchCache) start(rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live, w.floor, w.rev = true, rev, rev
	w.ring, w.ringBytes = nil, 0
	clear(w.latest)
}

// stop ends every watcher with err: they resume from their last version.
func (w *WatchCache) stop(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live = false
	for s := range w.subs {
		w.endLocked(s, err)
	}
}

func (w *WatchCache) endLocked(s *cacheWatcher, err error) {
	delete(w.subs, s)
	if err != nil {
		select {
		case s.ch <- storage.Event{Type: api.Error, Err: err}:
		default: // full: closing says enough
		}
	}
	close(s.ch)
}

func eventKey(ev storage.Event) string {
	m := ev.Object.GetObjectMeta()
	return m.Namespace + "/" + m.Name
}

func (w *WatchCache) add(ev storage.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ring = append(w.ring, ev)
	w.ringBytes += ev.Size
	w.rev = ev.Revision
	key := eventKey(ev)
	w.latest[key] = ev
	for len(w.ring) > watchCacheEvents || (w.ringBytes > watchCacheBytes && len(w.ring) > 1) {
		old := w.ring[0]
		w.ring[0] = storage.Event{}
		w.ring = w.ring[1:]
		w.ringBytes -= old.Size
		w.floor = old.Revision
		if k := eventKey(old); w.latest[k].Revision == old.Revision {
			delete(w.latest, k)
		}
	}
	for s := range w.subs {
		if ev.Revision <= s.from || (s.ns != "" && ev.Object.GetObjectMeta().Namespace != s.ns) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			// Too slow: cut off rather than buffer without bound.
			w.endLocked(s, nil)
		}
	}
}

// watch streams the changes of namespace ns ("" for all) after revision
// from, from memory when the cache has them all, else from the store.
func (w *WatchCache) watch(ctx context.Context, ns string, from int64, storePrefix string) (<-chan storage.Event, error) {
	w.mu.Lock()
	// A cache that is starting, or following the store again, is live in
	// a moment: the watch waits for it rather than taking a store watch of
	// its own, which would decode every change a second time for as long
	// as it lasts (the apiserver's own mirrors watch from its first
	// moments on).
	for deadline := time.Now().Add(cacheStartWait); !w.live && ctx.Err() == nil && time.Now().Before(deadline); {
		w.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		w.mu.Lock()
	}
	if !w.live || from < w.floor {
		w.mu.Unlock()
		return w.store.Watch(ctx, storePrefix, from, w.newObj)
	}
	s := &cacheWatcher{ns: ns, from: from, ch: make(chan storage.Event, WatcherBuffer)}
	for _, ev := range w.ring {
		if ev.Revision <= from || (ns != "" && ev.Object.GetObjectMeta().Namespace != ns) {
			continue
		}
		if len(s.ch) == cap(s.ch) {
			// More to replay than a watcher may hold: the store serves it.
			w.mu.Unlock()
			return w.store.Watch(ctx, storePrefix, from, w.newObj)
		}
		s.ch <- ev
	}
	w.subs[s] = struct{}{}
	w.mu.Unlock()
	go func() {
		<-ctx.Done()
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.subs[s]; ok {
			w.endLocked(s, nil)
		}
	}()
	return s.ch, nil
}

// LatestAt returns the object at key as of revision rv when that is the
// newest change of it the cache holds: an update that starts from the
// object a client read then needs no read from the store (its write is
// still conditional on rv, so a change the cache has not seen yet makes it
// fail as it should).
func (w *WatchCache) LatestAt(ns, name, rv string) (api.Object, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev, ok := w.latest[ns+"/"+name]
	if !ok || ev.Type == api.Deleted || ev.Object.GetObjectMeta().ResourceVersion != rv {
		return nil, false
	}
	return ev.Object, true
}
