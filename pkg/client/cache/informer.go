// Package cache keeps in-memory copies of API objects up to date from the
// apiserver's watch, for controllers and the scheduler: an Informer lists a
// resource, follows its changes, indexes the objects and tells event
// handlers what changed.
//
// Objects handed out by an informer, its Lister and its handlers are shared
// by every reader: never change one. DeepCopy it first.
package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/wait"
)

// ListerWatcher is the source of an informer; a *client.ResourceClient is one.
type ListerWatcher[PT any] interface {
	List(ctx context.Context, opts client.ListOptions) ([]PT, string, error)
	Watch(ctx context.Context, opts client.ListOptions) <-chan client.Event[PT]
}

var _ ListerWatcher[*api.Pod] = (*client.ResourceClient[api.Pod, *api.Pod])(nil)

// Handler is told of changes. Any func may be nil. Calls come one at a time,
// in the order of the changes, from the informer's goroutine: keep them
// short (enqueue a key) and do not change the objects.
type Handler[PT any] struct {
	OnAdd    func(obj PT)
	OnUpdate func(old, cur PT)
	// OnDelete gets the last state of the object.
	OnDelete func(obj PT)
}

// IndexFunc returns the index values of an object (none to leave it out).
type IndexFunc[PT any] func(obj PT) []string

// DefaultResync is how often an informer lists again from scratch. A watch
// misses nothing while it runs, but a watch resumed from a revision the
// server has compacted away cannot report objects deleted meanwhile; the
// periodic list does.
const DefaultResync = 10 * time.Minute

// Informer keeps a cache of one resource.
type Informer[T any, PT client.Object[T]] struct {
	lw     ListerWatcher[PT]
	opts   client.ListOptions
	resync time.Duration

	mu       sync.RWMutex
	items    map[string]PT
	indexers map[string]IndexFunc[PT]
	// indices[index][value] is the set of keys with that value.
	indices map[string]map[string]map[string]struct{}

	// dispatch serializes changes with handler calls and registrations, so
	// that handlers see changes in order and a late handler misses none.
	dispatch sync.Mutex
	handlers []Handler[PT]

	synced  atomic.Bool
	started atomic.Bool
}

// Option configures an informer.
type Option func(*options)

type options struct {
	list   client.ListOptions
	resync time.Duration
}

// WithListOptions narrows what the informer lists and watches.
func WithListOptions(o client.ListOptions) Option {
	return func(opts *options) { opts.list = o }
}

// WithResync sets how often the informer lists again (DefaultResync).
func WithResync(d time.Duration) Option {
	return func(opts *options) { opts.resync = d }
}

// NewInformer returns an informer of what lw lists; Run starts it.
func NewInformer[T any, PT client.Object[T]](lw ListerWatcher[PT], opts ...Option) *Informer[T, PT] {
	o := options{resync: DefaultResync}
	for _, f := range opts {
		f(&o)
	}
	if o.resync <= 0 {
		o.resync = DefaultResync
	}
	o.list.ResourceVersion = ""
	return &Informer[T, PT]{
		lw:       lw,
		opts:     o.list,
		resync:   o.resync,
		items:    map[string]PT{},
		indexers: map[string]IndexFunc[PT]{},
		indices:  map[string]map[string]map[string]struct{}{},
	}
}

// Key is the cache key of an object: "namespace/name", or "name" for a
// cluster-scoped object.
func Key(obj api.Object) string {
	m := obj.GetObjectMeta()
	if m.Namespace == "" {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}

// SplitKey is the inverse of Key.
func SplitKey(key string) (namespace, name string) {
	if ns, n, ok := strings.Cut(key, "/"); ok {
		return ns, n
	}
	return "", key
}

// AddIndexer adds an index by which ByIndex finds objects.
func (inf *Informer[T, PT]) AddIndexer(name string, fn IndexFunc[PT]) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	inf.indexers[name] = fn
	inf.indices[name] = map[string]map[string]struct{}{}
	for key, obj := range inf.items {
		inf.indexOne(name, fn, key, obj)
	}
}

func (inf *Informer[T, PT]) indexOne(name string, fn IndexFunc[PT], key string, obj PT) {
	idx := inf.indices[name]
	for _, v := range fn(obj) {
		set := idx[v]
		if set == nil {
			set = map[string]struct{}{}
			idx[v] = set
		}
		set[key] = struct{}{}
	}
}

func (inf *Informer[T, PT]) unindexOne(name string, fn IndexFunc[PT], key string, obj PT) {
	idx := inf.indices[name]
	for _, v := range fn(obj) {
		if set := idx[v]; set != nil {
			delete(set, key)
			if len(set) == 0 {
				delete(idx, v)
			}
		}
	}
}

// AddEventHandler registers h. Added after the informer has objects, h is
// first told of each of them as added.
func (inf *Informer[T, PT]) AddEventHandler(h Handler[PT]) {
	inf.dispatch.Lock()
	defer inf.dispatch.Unlock()
	inf.handlers = append(inf.handlers, h)
	if h.OnAdd == nil {
		return
	}
	for _, obj := range inf.Lister().List(nil) {
		h.OnAdd(obj)
	}
}

// HasSynced reports whether the first list has been loaded and handed to
// the handlers.
func (inf *Informer[T, PT]) HasSynced() bool { return inf.synced.Load() }

// Lister reads the cache.
func (inf *Informer[T, PT]) Lister() *Lister[T, PT] { return &Lister[T, PT]{inf: inf} }

// Start runs the informer in a goroutine until ctx ends; later calls do nothing.
func (inf *Informer[T, PT]) Start(ctx context.Context) {
	if inf.started.CompareAndSwap(false, true) {
		go inf.run(ctx)
	}
}

// Run runs the informer until ctx ends.
func (inf *Informer[T, PT]) Run(ctx context.Context) {
	if inf.started.CompareAndSwap(false, true) {
		inf.run(ctx)
	}
}

const (
	minListBackoff = 100 * time.Millisecond
	maxListBackoff = 5 * time.Second
)

func (inf *Informer[T, PT]) run(ctx context.Context) {
	backoff := minListBackoff
	for ctx.Err() == nil {
		items, rv, err := inf.lw.List(ctx, inf.opts)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.WithError(err).Warn("informer: list failed, retrying")
			if !wait.Sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, maxListBackoff)
			continue
		}
		backoff = minListBackoff
		inf.replace(items)
		inf.synced.Store(true)

		// Follow the changes until the next resync, with jitter so that
		// informers started together do not list together.
		jitter := time.Duration(rand.Int64N(int64(inf.resync)/5 + 1))
		wctx, cancel := context.WithTimeout(ctx, inf.resync+jitter)
		o := inf.opts
		o.ResourceVersion = rv
		for ev := range inf.lw.Watch(wctx, o) {
			inf.apply(ev)
		}
		cancel()
	}
}

// replace makes the cache hold exactly items, telling handlers the difference.
func (inf *Informer[T, PT]) replace(items []PT) {
	inf.dispatch.Lock()
	defer inf.dispatch.Unlock()
	type change struct {
		old, cur PT
	}
	var changes []change
	inf.mu.Lock()
	seen := make(map[string]struct{}, len(items))
	for _, obj := range items {
		k := Key(obj)
		seen[k] = struct{}{}
		old, ok := inf.items[k]
		if ok && old.GetObjectMeta().ResourceVersion == obj.GetObjectMeta().ResourceVersion {
			continue
		}
		inf.putLocked(k, obj)
		changes = append(changes, change{old: old, cur: obj})
	}
	for k, old := range inf.items {
		if _, ok := seen[k]; !ok {
			inf.removeLocked(k)
			changes = append(changes, change{old: old})
		}
	}
	inf.mu.Unlock()
	for _, c := range changes {
		switch {
		case c.cur == nil:
			inf.notifyDelete(c.old)
		case c.old == nil:
			inf.notifyAdd(c.cur)
		default:
			inf.notifyUpdate(c.old, c.cur)
		}
	}
}

// apply records one watch event and tells the handlers.
func (inf *Informer[T, PT]) apply(ev client.Event[PT]) {
	inf.dispatch.Lock()
	defer inf.dispatch.Unlock()
	k := Key(ev.Object)
	inf.mu.Lock()
	old, had := inf.items[k]
	switch ev.Type {
	case api.Added, api.Modified:
		if had && old.GetObjectMeta().ResourceVersion == ev.Object.GetObjectMeta().ResourceVersion {
			inf.mu.Unlock()
			return
		}
		inf.putLocked(k, ev.Object)
	case api.Deleted:
		if !had {
			inf.mu.Unlock()
			return
		}
		inf.removeLocked(k)
	default:
		inf.mu.Unlock()
		return
	}
	inf.mu.Unlock()
	switch {
	case ev.Type == api.Deleted:
		inf.notifyDelete(ev.Object)
	case had:
		inf.notifyUpdate(old, ev.Object)
	default:
		inf.notifyAdd(ev.Object)
	}
}

func (inf *Informer[T, PT]) putLocked(k string, obj PT) {
	if old, ok := inf.items[k]; ok {
		for name, fn := range inf.indexers {
			inf.unindexOne(name, fn, k, old)
		}
	}
	inf.items[k] = obj
	for name, fn := range inf.indexers {
		inf.indexOne(name, fn, k, obj)
	}
}

func (inf *Informer[T, PT]) removeLocked(k string) {
	old, ok := inf.items[k]
	if !ok {
		return
	}
	for name, fn := range inf.indexers {
		inf.unindexOne(name, fn, k, old)
	}
	delete(inf.items, k)
}

func (inf *Informer[T, PT]) notifyAdd(obj PT) {
	for _, h := range inf.handlers {
		if h.OnAdd != nil {
			h.OnAdd(obj)
		}
	}
}

func (inf *Informer[T, PT]) notifyUpdate(old, cur PT) {
	for _, h := range inf.handlers {
		if h.OnUpdate != nil {
			h.OnUpdate(old, cur)
		}
	}
}

func (inf *Informer[T, PT]) notifyDelete(obj PT) {
	for _, h := range inf.handlers {
		if h.OnDelete != nil {
			h.OnDelete(obj)
		}
	}
}

// DeepCopy returns a copy of obj that may be changed freely.
func DeepCopy[T any, PT client.Object[T]](obj PT) PT {
	data, err := json.Marshal(obj)
	if err != nil {
		// API types always encode; anything else is a programming error.
		panic(fmt.Sprintf("deep copy of %T: %v", obj, err))
	}
	out := PT(new(T))
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("deep copy of %T: %v", obj, err))
	}
	return out
}

// Equal reports whether two values encode to the same JSON: equal as the
// API stores them, so a nil map and an empty one, omitted alike, compare
// equal and a controller does not rewrite an object that has not changed.
func Equal(a, b any) bool {
	x, errx := json.Marshal(a)
	y, erry := json.Marshal(b)
	return errx == nil && erry == nil && bytes.Equal(x, y)
}

// WaitForSync waits until every informer has synced; false if ctx ended first.
func WaitForSync(ctx context.Context, informers ...interface{ HasSynced() bool }) bool {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		all := true
		for _, inf := range informers {
			if !inf.HasSynced() {
				all = false
				break
			}
		}
		if all {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
