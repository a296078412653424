package cache

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache/cachetest"
	"minik8s/pkg/labels"
)

// fakeLW serves a scripted sequence of lists and forwards events from the
// test to the informer's current watch.
type fakeLW struct {
	mu     sync.Mutex
	lists  [][]*api.Pod
	nlist  int
	events chan client.Event[*api.Pod]
	// watchRVs records the version each watch started from.
	watchRVs []string
}

func (f *fakeLW) List(ctx context.Context, opts client.ListOptions) ([]*api.Pod, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := min(f.nlist, len(f.lists)-1)
	f.nlist++
	return f.lists[i], fmt.Sprintf("%d", 100*(i+1)), nil
}

func (f *fakeLW) Watch(ctx context.Context, opts client.ListOptions) <-chan client.Event[*api.Pod] {
	f.mu.Lock()
	f.watchRVs = append(f.watchRVs, opts.ResourceVersion)
	f.mu.Unlock()
	return cachetest.Forward(ctx, f.events)
}

func pod(ns, name, rv, node string, lbls map[string]string) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Labels: lbls},
		Spec: api.PodSpec{NodeName: node}}
}

// recorder logs handler calls as "add a/x", "update a/x 1->2", "delete a/x".
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) handler() Handler[*api.Pod] {
	return Handler[*api.Pod]{
		OnAdd: func(p *api.Pod) { r.add("add " + Key(p)) },
		OnUpdate: func(old, cur *api.Pod) {
			r.add(fmt.Sprintf("update %s %s->%s", Key(cur), old.ResourceVersion, cur.ResourceVersion))
		},
		OnDelete: func(p *api.Pod) { r.add("delete " + Key(p)) },
	}
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, s)
}

func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.log) == 0 {
		return ""
	}
	return r.log[len(r.log)-1]
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.log
	r.log = nil
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func byNode(p *api.Pod) []string {
	if p.Spec.NodeName == "" {
		return nil
	}
	return []string{p.Spec.NodeName}
}

func names(pods []*api.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, Key(p))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestInformerFollowsEvents(t *testing.T) {
	lw := &fakeLW{
		lists:  [][]*api.Pod{{pod("a", "x", "1", "n1", map[string]string{"app": "web"}), pod("b", "y", "2", "", nil)}},
		events: make(chan client.Event[*api.Pod]),
	}
	inf := NewInformer[api.Pod](lw)
	inf.AddIndexer("node", byNode)
	rec := &recorder{}
	inf.AddEventHandler(rec.handler())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if inf.HasSynced() {
		t.Fatal("synced before running")
	}
	inf.Start(ctx)
	if !WaitForSync(ctx, inf) {
		t.Fatal("not synced")
	}
	got := rec.take()
	sort.Strings(got)
	if strings.Join(got, ";") != "add a/x;add b/y" {
		t.Fatalf("after list: %v", got)
	}
	// The first event can only be taken once the watch runs.
	lw.events <- client.Event[*api.Pod]{Type: api.Added, Object: pod("m", "first", "100a", "", nil)}
	lw.events <- client.Event[*api.Pod]{Type: api.Deleted, Object: pod("m", "first", "100b", "", nil)}
	waitFor(t, "first events", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.log) == 2
	})
	rec.take()
	lw.mu.Lock()
	rv := lw.watchRVs[0]
	lw.mu.Unlock()
	if rv != "100" {
		t.Fatalf("watch started from %q, want the list's version 100", rv)
	}
	l := inf.Lister()

	steps := []struct {
		ev   client.Event[*api.Pod]
		want string
	}{
		{client.Event[*api.Pod]{Type: api.Added, Object: pod("a", "z", "101", "n1", nil)}, "add a/z"},
		{client.Event[*api.Pod]{Type: api.Modified, Object: pod("b", "y", "102", "n2", nil)}, "update b/y 2->102"},
		// A repeat of a version already held changes nothing.
		{client.Event[*api.Pod]{Type: api.Modified, Object: pod("b", "y", "102", "n2", nil)}, ""},
		{client.Event[*api.Pod]{Type: api.Deleted, Object: pod("a", "x", "103", "n1", nil)}, "delete a/x"},
		// Deleting what is not there tells no one.
		{client.Event[*api.Pod]{Type: api.Deleted, Object: pod("a", "nope", "104", "", nil)}, ""},
		// MODIFIED of an unknown object is an add.
		{client.Event[*api.Pod]{Type: api.Modified, Object: pod("c", "w", "105", "", nil)}, "add c/w"},
	}
	for _, s := range steps {
		lw.events <- s.ev
		// A marker event flushes the pipeline: once it is seen, so is s.ev.
		lw.events <- client.Event[*api.Pod]{Type: api.Added, Object: pod("m", "marker", s.ev.Object.ResourceVersion+"m", "", nil)}
		waitFor(t, "marker", func() bool { return rec.last() == "add m/marker" })
		got := rec.take()
		got = got[:len(got)-1]
		lw.events <- client.Event[*api.Pod]{Type: api.Deleted, Object: pod("m", "marker", "", "", nil)}
		waitFor(t, "marker gone", func() bool { return rec.last() == "delete m/marker" })
		rec.take()
		if strings.Join(got, ";") != s.want {
			t.Errorf("after %s %s: handlers saw %q, want %q", s.ev.Type, Key(s.ev.Object), got, s.want)
		}
	}
	if got := names(l.List(nil)); got != "a/z,b/y,c/w" {
		t.Errorf("List = %s", got)
	}
	if got := names(l.ListNamespace("a", nil)); got != "a/z" {
		t.Errorf("ListNamespace(a) = %s", got)
	}
	if got := names(l.ByIndex("node", "n1")); got != "a/z" {
		t.Errorf("ByIndex(node, n1) = %s", got)
	}
	if got := names(l.ByIndex("node", "n2")); got != "b/y" {
		t.Errorf("ByIndex(node, n2) = %s (b/y moved there)", got)
	}
	if p, ok := l.Get("b", "y"); !ok || p.ResourceVersion != "102" {
		t.Errorf("Get(b, y) = %v, %v", p, ok)
	}

	// A handler added late is told of everything there is.
	late := &recorder{}
	inf.AddEventHandler(late.handler())
	got = late.take()
	sort.Strings(got)
	if strings.Join(got, ";") != "add a/z;add b/y;add c/w" {
		t.Errorf("late handler saw %v", got)
	}
}

func TestInformerResyncReportsTheDifference(t *testing.T) {
	lw := &fakeLW{
		lists: [][]*api.Pod{
			{pod("a", "keep", "1", "", nil), pod("a", "change", "2", "", nil), pod("a", "gone", "3", "", nil)},
			{pod("a", "keep", "1", "", nil), pod("a", "change", "20", "", nil), pod("a", "new", "21", "", nil)},
		},
		events: make(chan client.Event[*api.Pod]),
	}
	inf := NewInformer[api.Pod](lw, WithResync(30*time.Millisecond))
	rec := &recorder{}
	inf.AddEventHandler(rec.handler())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf.Start(ctx)
	waitFor(t, "second list", func() bool { _, ok := inf.Lister().Get("a", "new"); return ok })
	got := rec.take()
	sort.Strings(got)
	want := "add a/change;add a/gone;add a/keep;add a/new;delete a/gone;update a/change 2->20"
	if strings.Join(got, ";") != want {
		t.Fatalf("handlers saw %v\nwant %s", got, want)
	}
}

func TestSelectorAndDeepCopy(t *testing.T) {
	lw := &fakeLW{lists: [][]*api.Pod{{
		pod("a", "web1", "1", "", map[string]string{"app": "web", "tier": "front"}),
		pod("a", "web2", "2", "", map[string]string{"app": "web"}),
		pod("b", "db", "3", "", map[string]string{"app": "db"}),
	}}, events: make(chan client.Event[*api.Pod])}
	inf := NewInformer[api.Pod](lw)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf.Start(ctx)
	WaitForSync(ctx, inf)
	l := inf.Lister()
	tests := []struct {
		ns, sel, want string
	}{
		{"", "", "a/web1,a/web2,b/db"},
		{"", "app=web", "a/web1,a/web2"},
		{"", "app=web,tier", "a/web1"},
		{"b", "app", "b/db"},
		{"a", "app=db", ""},
	}
	for _, tt := range tests {
		sel, err := labels.Parse(tt.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(l.ListNamespace(tt.ns, sel)); got != tt.want {
			t.Errorf("ListNamespace(%q, %q) = %s, want %s", tt.ns, tt.sel, got, tt.want)
		}
	}
	p, _ := l.Get("a", "web1")
	cp := DeepCopy(p)
	cp.Labels["app"] = "changed"
	if p.Labels["app"] != "web" {
		t.Fatal("changing a deep copy changed the cached object")
	}
}
