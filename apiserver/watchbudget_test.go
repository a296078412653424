package apiserver

import (
	"context"
	"testing"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// TestWatchBudget walks the byte accounting of watches: a watch's bound,
// its client's across watches, the one event a watch (or client) holding
// nothing may always take, and what release gives back.
func TestWatchBudget(t *testing.T) {
	type step struct {
		watch int    // index into the watches opened so far
		do    string // open (of client), take, give, release
		n     int64
		want  bool // for take
	}
	for _, tc := range []struct {
		name        string
		watch, user int64
		steps       []step
		held        map[string]int64 // per client at the end
	}{
		{name: "within both", watch: 100, user: 300, steps: []step{
			{do: "open a"}, {watch: 0, do: "take", n: 60, want: true}, {watch: 0, do: "take", n: 40, want: true},
		}, held: map[string]int64{"a": 100}},
		{name: "past the watch's bound", watch: 100, user: 300, steps: []step{
			{do: "open a"}, {watch: 0, do: "take", n: 60, want: true}, {watch: 0, do: "take", n: 41, want: false},
		}, held: map[string]int64{"a": 60}},
		{name: "one large event when holding nothing", watch: 100, user: 300, steps: []step{
			{do: "open a"}, {watch: 0, do: "take", n: 250, want: true}, {watch: 0, do: "take", n: 1, want: false},
			{watch: 0, do: "give", n: 250}, {watch: 0, do: "take", n: 1, want: true},
		}, held: map[string]int64{"a": 1}},
		{name: "past the client's bound across watches", watch: 100, user: 150, steps: []step{
			{do: "open a"}, {do: "open a"}, {do: "open b"},
			{watch: 0, do: "take", n: 100, want: true}, {watch: 1, do: "take", n: 60, want: false},
			{watch: 1, do: "take", n: 50, want: true},
			{watch: 2, do: "take", n: 100, want: true}, // another client is not held back
		}, held: map[string]int64{"a": 150, "b": 100}},
		{name: "a client holding nothing takes one large event", watch: 100, user: 150, steps: []step{
			{do: "open a"}, {do: "open a"},
			{watch: 0, do: "take", n: 400, want: true}, {watch: 1, do: "take", n: 1, want: false},
		}, held: map[string]int64{"a": 400}},
		{name: "release gives all back", watch: 100, user: 150, steps: []step{
			{do: "open a"}, {do: "open a"},
			{watch: 0, do: "take", n: 100, want: true}, {watch: 1, do: "take", n: 60, want: false},
			{watch: 0, do: "release"}, {watch: 1, do: "take", n: 60, want: true},
			{watch: 0, do: "give", n: 100}, {watch: 0, do: "take", n: 1, want: false}, // released: nothing more
		}, held: map[string]int64{"a": 60}},
		{name: "no bounds", watch: -1, user: -1, steps: []step{
			{do: "open a"}, {watch: 0, do: "take", n: 1 << 40, want: true}, {watch: 0, do: "take", n: 1 << 40, want: true},
		}, held: map[string]int64{"a": 2 << 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newWatchLimiter(0, tc.watch, tc.user)
			var watches []*watchBudget
			for i, s := range tc.steps {
				switch {
				case s.do == "open a" || s.do == "open b":
					b, err := l.acquire(s.do[len("open "):])
					if err != nil {
						t.Fatal(err)
					}
					watches = append(watches, b)
				case s.do == "take":
					if got := watches[s.watch].take(s.n); got != s.want {
						t.Fatalf("step %d: watch %d take %d = %v, want %v", i, s.watch, s.n, got, s.want)
					}
				case s.do == "give":
					watches[s.watch].give(s.n)
				case s.do == "release":
					watches[s.watch].release()
				}
			}
			for client, want := range tc.held {
				if got := l.clients[client].bytes; got != want {
					t.Errorf("client %s holds %d, want %d", client, got, want)
				}
			}
			for _, b := range watches {
				b.release()
			}
			if len(l.clients) != 0 {
				t.Errorf("%d clients left after every watch was released", len(l.clients))
			}
		})
	}
}

func TestWatchLimiterCount(t *testing.T) {
	l := newWatchLimiter(2, 0, 0)
	a, _ := l.acquire("a")
	if _, err := l.acquire("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.acquire("a"); !errdefs.IsTooManyRequests(err) {
		t.Fatalf("a third watch: %v, want 429", err)
	}
	a.release()
	a.release() // twice is once
	if _, err := l.acquire("a"); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := l.acquire("a"); !errdefs.IsTooManyRequests(err) {
		t.Fatalf("a released twice gave back two places: %v", err)
	}
}

// TestBoundedEvents: the events waiting for a writer count against the
// watch's budget until given back; a queue past it ends the watch and
// stops the store's, while an unbounded one passes everything.
func TestBoundedEvents(t *testing.T) {
	ev := func(rev int64, size int) storage.Event {
		return storage.Event{Type: api.Added, Revision: rev, Size: size, Object: &api.ConfigMap{}}
	}
	l := newWatchLimiter(0, 100, 1000)
	b, _ := l.acquire("a")
	in := make(chan storage.Event, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	out := boundedEvents(ctx, func() { close(stopped) }, in, b)
	in <- ev(1, 40)
	in <- ev(2, 40)
	if got := <-out; got.Revision != 1 {
		t.Fatalf("first event %d", got.Revision)
	}
	b.give(40) // written
	in <- ev(3, 40)
	in <- ev(4, 40) // 40 (2) + 40 (3) + 40 > 100: cut off
	var got []int64
	for e := range out {
		got = append(got, e.Revision)
	}
	if len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("events after the first: %v, want 2 and 3, then the end", got)
	}
	<-stopped
	b.release()
}

// pagedStore serves ListPage from sizes, one object per size, recording
// the limits asked for.
type pagedStore struct {
	storage.Interface
	sizes  []int
	limits []int
}

func (p *pagedStore) ListPage(_ context.Context, _ string, rev int64, after string, limit int, _ storage.NewFunc) (storage.Page, error) {
	p.limits = append(p.limits, limit)
	start := 0
	if after != "" {
		start = int(after[0]) + 1
	}
	page := storage.Page{Revision: 7}
	for i := start; i < len(p.sizes) && len(page.Objects) < limit; i++ {
		page.Objects = append(page.Objects, &api.ConfigMap{})
		page.Sizes = append(page.Sizes, p.sizes[i])
		if i < len(p.sizes)-1 && len(page.Objects) == limit {
			page.Next = string(rune(i))
		}
	}
	return page, nil
}

// TestInitialListPages: the initial list is read a page at a time, the
// pages growing from one object while small and shrinking while large,
// each counted against the watch's budget as read; a first page past the
// client's bound is 429.
func TestInitialListPages(t *testing.T) {
	small, large := 1<<10, 400<<10
	store := &pagedStore{sizes: []int{small, small, small, small, small, small, small}}
	for range 12 {
		store.sizes = append(store.sizes, large)
	}
	reg := &registry.Store{Resource: api.ConfigMapsResource, Storage: store}
	l := newWatchLimiter(0, 4<<20, 4<<20)
	b, _ := l.acquire("a")
	defer b.release()
	list := &initialList{reg: reg, ns: "default", budget: b, limit: 1}
	if err := list.read(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	objects := len(list.page.Objects)
	for list.page.Next != "" {
		for _, n := range list.page.Sizes {
			b.give(int64(n)) // sent
		}
		if err := list.read(context.Background(), list.page.Next); err != nil {
			t.Fatal(err)
		}
		objects += len(list.page.Objects)
	}
	if objects != len(store.sizes) {
		t.Fatalf("%d objects listed, want %d", objects, len(store.sizes))
	}
	want := []int{1, 2, 4, 8, 4}
	if len(store.limits) != len(want) {
		t.Fatalf("page limits %v, want %v", store.limits, want)
	}
	for i := range want {
		if store.limits[i] != want[i] {
			t.Fatalf("page limits %v, want %v", store.limits, want)
		}
	}

	// Another watch of the client, whose first page does not fit.
	full := newWatchLimiter(0, 1<<30, 500<<10)
	holder, _ := full.acquire("a")
	holder.take(400 << 10)
	second, _ := full.acquire("a")
	refused := &initialList{reg: &registry.Store{Resource: api.ConfigMapsResource, Storage: &pagedStore{sizes: []int{large}}}, budget: second, limit: 1}
	if err := refused.read(context.Background(), ""); !errdefs.IsTooManyRequests(err) {
		t.Fatalf("a first page past the client's bound: %v, want 429", err)
	}
}
