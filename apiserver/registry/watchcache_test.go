package registry

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/storage"
)

// fakeStore is a store whose watch the test feeds; the cache uses only
// Revision and Watch.
type fakeStore struct {
	storage.Interface

	mu      sync.Mutex
	rev     int64
	feeds   []chan storage.Event // what the cache's watches get, newest last
	direct  []int64              // revisions of the watches served by the store itself
	started chan struct{}
}

func newFakeStore(rev int64) *fakeStore {
	return &fakeStore{rev: rev, started: make(chan struct{}, 8)}
}

func (f *fakeStore) Revision(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev, nil
}

// Watch hands the cache a feed the test writes to (and closes it when ctx
// ends, as the store does); any other watch is recorded and ends at once.
func (f *fakeStore) Watch(ctx context.Context, prefix string, from int64, _ storage.NewFunc) (<-chan storage.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan storage.Event, 16)
	if prefix == "/registry/configmaps/" && from == f.rev {
		in := make(chan storage.Event)
		f.feeds = append(f.feeds, in)
		f.started <- struct{}{}
		go func() {
			defer close(ch)
			for {
				select {
				case ev := <-in:
					ch <- ev
					if ev.Type == api.Error {
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
		return ch, nil
	}
	f.direct = append(f.direct, from)
	close(ch)
	return ch, nil
}

func (f *fakeStore) feed() chan storage.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.feeds[len(f.feeds)-1]
}

func cmEvent(typ api.EventType, ns, name string, rev int64) storage.Event {
	cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: strconv.FormatInt(rev, 10)}}
	return storage.Event{Type: typ, Object: cm, Revision: rev, Size: 100}
}

// startCache runs a cache of configmaps over a fake store at revision 10.
func startCache(t *testing.T) (*WatchCache, *fakeStore) {
	t.Helper()
	store := newFakeStore(10)
	w := NewWatchCache(store, "/registry/configmaps/", func() api.Object { return &api.ConfigMap{} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-store.started
	return w, store
}

// push feeds events to the cache and waits until it has them.
func push(t *testing.T, w *WatchCache, store *fakeStore, evs ...storage.Event) {
	t.Helper()
	for _, ev := range evs {
		store.feed() <- ev
	}
	last := evs[len(evs)-1].Revision
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		rev := w.rev
		w.mu.Unlock()
		if rev >= last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache did not reach revision %d", last)
		}
		time.Sleep(time.Millisecond)
	}
}

func recv(t *testing.T, ch <-chan storage.Event) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return storage.Event{}
}

func TestWatchCacheReplaysAndFollows(t *testing.T) {
	w, store := startCache(t)
	push(t, w, store, cmEvent(api.Added, "a", "x", 11), cmEvent(api.Added, "b", "y", 12), cmEvent(api.Modified, "a", "x", 13))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// From 11 in namespace a: the change at 13, from memory, then live ones.
	ch, err := w.watch(ctx, "a", 11, "/registry/configmaps/a/")
	if err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, ch); ev.Revision != 13 {
		t.Fatalf("replayed revision %d, want 13", ev.Revision)
	}
	push(t, w, store, cmEvent(api.Added, "b", "z", 14), cmEvent(api.Deleted, "a", "x", 15))
	if ev := recv(t, ch); ev.Revision != 15 || ev.Type != api.Deleted {
		t.Fatalf("live event %v at %d, want DELETED at 15 (namespace b's change left out)", ev.Type, ev.Revision)
	}
	// From before the cache started: the store serves it.
	if _, err := w.watch(ctx, "", 5, "/registry/configmaps/"); err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	direct := store.direct
	store.mu.Unlock()
	if len(direct) != 1 || direct[0] != 5 {
		t.Fatalf("watches served by the store: %v, want one from 5", direct)
	}
	// A watch from a revision the cache has not reached waits for it.
	future, err := w.watch(ctx, "", 20, "/registry/configmaps/")
	if err != nil {
		t.Fatal(err)
	}
	push(t, w, store, cmEvent(api.Added, "a", "p", 20), cmEvent(api.Added, "a", "q", 21))
	if ev := recv(t, future); ev.Revision != 21 {
		t.Fatalf("a watch from 20 got revision %d first, want 21", ev.Revision)
	}
}

func TestWatchCacheCutsOffSlowWatcher(t *testing.T) {
	w, store := startCache(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow, err := w.watch(ctx, "", 10, "/registry/configmaps/")
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i <= WatcherBuffer; i++ {
		push(t, w, store, cmEvent(api.Added, "a", "n"+strconv.FormatInt(i, 10), 11+i))
	}
	n := 0
	for range slow {
		n++
	}
	if n != WatcherBuffer {
		t.Fatalf("the slow watcher got %d events before it was cut off, want its buffer (%d)", n, WatcherBuffer)
	}
	w.mu.Lock()
	subs := len(w.subs)
	w.mu.Unlock()
	if subs != 0 {
		t.Fatalf("%d watchers left registered", subs)
	}
}

func TestWatchCacheLatestAt(t *testing.T) {
	w, store := startCache(t)
	push(t, w, store, cmEvent(api.Added, "a", "x", 11))
	if obj, ok := w.LatestAt("a", "x", "11"); !ok || obj.GetObjectMeta().Name != "x" {
		t.Fatalf("latestAt(x, 11) = %v, %v", obj, ok)
	}
	push(t, w, store, cmEvent(api.Modified, "a", "x", 12))
	if _, ok := w.LatestAt("a", "x", "11"); ok {
		t.Fatal("latestAt answered for a version that is no longer the newest")
	}
	push(t, w, store, cmEvent(api.Deleted, "a", "x", 13))
	if _, ok := w.LatestAt("a", "x", "13"); ok {
		t.Fatal("latestAt answered for a deleted object")
	}
}

func TestWatchCacheBrokenStoreWatchEndsWatchers(t *testing.T) {
	w, store := startCache(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := w.watch(ctx, "", 10, "/registry/configmaps/")
	if err != nil {
		t.Fatal(err)
	}
	store.feed() <- storage.Event{Type: api.Error, Err: context.Canceled}
	ev := recv(t, ch)
	if ev.Type != api.Error {
		t.Fatalf("got %v, want an error event", ev.Type)
	}
	if _, ok := <-ch; ok {
		t.Fatal("the watch stayed open after the store's watch broke")
	}
	<-store.started // the cache follows the store again
}
