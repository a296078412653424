// Package storagetest is the conformance suite every storage.Interface
// implementation must pass.
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

func newConfigMap() api.Object { return &api.ConfigMap{} }

func cm(name, value string) *api.ConfigMap {
	return &api.ConfigMap{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Data:       map[string]string{"k": value},
	}
}

// Run runs the suite against a store; each subtest uses its own key prefix.
func Run(t *testing.T, s storage.Interface) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Interface, prefix string)
	}{
		{"CreateGet", testCreateGet},
		{"CreateExisting", testCreateExisting},
		{"CreateMany", testCreateMany},
		{"GetMissing", testGetMissing},
		{"List", testList},
		{"ListPage", testListPage},
		{"UpdateCAS", testUpdateCAS},
		{"UpdateMissing", testUpdateMissing},
		{"GuaranteedUpdateConcurrent", testGuaranteedUpdateConcurrent},
		{"GuaranteedUpdateAbort", testGuaranteedUpdateAbort},
		{"Delete", testDelete},
		{"WatchOrder", testWatchOrder},
		{"WatchResume", testWatchResume},
		{"WatchPrevObject", testWatchPrevObject},
		{"TTL", testTTL},
	}
	for i, tc := range tests {
		prefix := fmt.Sprintf("/conformance/%d-%s/", i, tc.name)
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, s, prefix) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func testCreateGet(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	obj := cm("a", "1")
	if err := s.Create(c, p+"a", obj, 0); err != nil {
		t.Fatalf("create: %v", err)
	}
	if obj.ResourceVersion == "" {
		t.Fatal("create did not set resourceVersion")
	}
	got := &api.ConfigMap{}
	if err := s.Get(c, p+"a", got); err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Data["k"] != "1" || got.ResourceVersion != obj.ResourceVersion {
		t.Fatalf("get = %+v (rv %s), want data 1 rv %s", got.Data, got.ResourceVersion, obj.ResourceVersion)
	}
}

func testCreateExisting(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	if err := s.Create(c, p+"a", cm("a", "1"), 0); err != nil {
		t.Fatal(err)
	}
	err := s.Create(c, p+"a", cm("a", "2"), 0)
	if !errdefs.IsAlreadyExists(err) {
		t.Fatalf("second create: got %v, want AlreadyExists", err)
	}
	got := &api.ConfigMap{}
	if err := s.Get(c, p+"a", got); err != nil || got.Data["k"] != "1" {
		t.Fatalf("object changed by a failed create: %+v %v", got.Data, err)
	}
}

func testCreateMany(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	a, b := cm("a", "1"), cm("b", "2")
	if err := s.CreateMany(c, []storage.Item{{Key: p + "a", Object: a}, {Key: p + "b", Object: b}}, 0); err != nil {
		t.Fatalf("create many: %v", err)
	}
	if a.ResourceVersion == "" || a.ResourceVersion != b.ResourceVersion {
		t.Fatalf("resourceVersions %q and %q, want one, set", a.ResourceVersion, b.ResourceVersion)
	}
	for key, want := range map[string]string{"a": "1", "b": "2"} {
		got := &api.ConfigMap{}
		if err := s.Get(c, p+key, got); err != nil || got.Data["k"] != want {
			t.Fatalf("get %s: %+v %v, want %s", key, got.Data, err, want)
		}
	}
	// One key taken: nothing is written.
	err := s.CreateMany(c, []storage.Item{{Key: p + "c", Object: cm("c", "3")}, {Key: p + "a", Object: cm("a", "9")}}, 0)
	if !errdefs.IsAlreadyExists(err) {
		t.Fatalf("create many over a taken key: got %v, want AlreadyExists", err)
	}
	if err := s.Get(c, p+"c", &api.ConfigMap{}); !errdefs.IsNotFound(err) {
		t.Fatalf("a refused batch wrote c: %v", err)
	}
	got := &api.ConfigMap{}
	if err := s.Get(c, p+"a", got); err != nil || got.Data["k"] != "1" {
		t.Fatalf("a refused batch changed a: %+v %v", got.Data, err)
	}
	if err := s.CreateMany(c, nil, 0); err != nil {
		t.Fatalf("create many of nothing: %v", err)
	}
}

func testGetMissing(t *testing.T, s storage.Interface, p string) {
	if err := s.Get(ctx(t), p+"missing", &api.ConfigMap{}); !errdefs.IsNotFound(err) {
		t.Fatalf("got %v, want NotFound", err)
	}
}

func testList(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	for _, n := range []string{"b", "a", "c"} {
		if err := s.Create(c, p+n, cm(n, n), 0); err != nil {
			t.Fatal(err)
		}
	}
	// A sibling prefix must not leak into the list.
	if err := s.Create(c, p[:len(p)-1]+"x/z", cm("z", "z"), 0); err != nil {
		t.Fatal(err)
	}
	objs, rev, err := s.List(c, p, newConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("list returned %d objects, want 3", len(objs))
	}
	for i, want := range []string{"a", "b", "c"} {
		if got := objs[i].GetObjectMeta().Name; got != want {
			t.Errorf("item %d = %s, want %s (sorted by key)", i, got, want)
		}
	}
	cur, err := s.Revision(c)
	if err != nil || rev <= 0 || rev > cur {
		t.Fatalf("list revision %d, store revision %d, err %v", rev, cur, err)
	}
}

func testListPage(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	for _, n := range []string{"d", "b", "a", "c", "e"} {
		if err := s.Create(c, p+n, cm(n, n), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(c, p[:len(p)-1]+"x/z", cm("z", "z"), 0); err != nil {
		t.Fatal(err)
	}
	var names []string
	page, err := s.ListPage(c, p, 0, "", 2, newConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	rev := page.Revision
	// A change after the first page is not in the next ones.
	if err := s.Create(c, p+"bb", cm("bb", "bb"), 0); err != nil {
		t.Fatal(err)
	}
	for {
		for i, o := range page.Objects {
			names = append(names, o.GetObjectMeta().Name)
			if page.Sizes[i] <= 0 {
				t.Errorf("%s: size %d", o.GetObjectMeta().Name, page.Sizes[i])
			}
		}
		if page.Revision != rev {
			t.Fatalf("page at revision %d, the first at %d", page.Revision, rev)
		}
		if page.Next == "" {
			break
		}
		if page, err = s.ListPage(c, p, rev, page.Next, 2, newConfigMap); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(names, ","); got != "a,b,c,d,e" {
		t.Fatalf("pages listed %s, want a,b,c,d,e", got)
	}
}

func testUpdateCAS(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	obj := cm("a", "1")
	if err := s.Create(c, p+"a", obj, 0); err != nil {
		t.Fatal(err)
	}
	stale := obj.ResourceVersion
	obj.Data["k"] = "2"
	if err := s.Update(c, p+"a", obj); err != nil {
		t.Fatalf("update with current rv: %v", err)
	}
	if obj.ResourceVersion == stale {
		t.Fatal("update did not advance resourceVersion")
	}
	old := cm("a", "3")
	old.ResourceVersion = stale
	if err := s.Update(c, p+"a", old); !errdefs.IsConflict(err) {
		t.Fatalf("update with stale rv: got %v, want Conflict", err)
	}
	got := &api.ConfigMap{}
	if err := s.Get(c, p+"a", got); err != nil || got.Data["k"] != "2" {
		t.Fatalf("stale update wrote: %+v %v", got.Data, err)
	}
	// No resourceVersion: unconditional.
	if err := s.Update(c, p+"a", cm("a", "4")); err != nil {
		t.Fatalf("unconditional update: %v", err)
	}
}

func testUpdateMissing(t *testing.T, s storage.Interface, p string) {
	if err := s.Update(ctx(t), p+"missing", cm("missing", "1")); !errdefs.IsNotFound(err) {
		t.Fatalf("got %v, want NotFound", err)
	}
}

func testGuaranteedUpdateConcurrent(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	if err := s.Create(c, p+"n", cm("n", "0"), 0); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := s.GuaranteedUpdate(c, p+"n", newConfigMap, func(cur api.Object) (api.Object, error) {
					m := cur.(*api.ConfigMap)
					n, _ := strconv.Atoi(m.Data["k"])
					m.Data["k"] = strconv.Itoa(n + 1)
					return m, nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := &api.ConfigMap{}
	if err := s.Get(c, p+"n", got); err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != strconv.Itoa(workers*each) {
		t.Fatalf("counter = %s, want %d: an increment was lost", got.Data["k"], workers*each)
	}
}

func testGuaranteedUpdateAbort(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	if err := s.Create(c, p+"a", cm("a", "1"), 0); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	_, err := s.GuaranteedUpdate(c, p+"a", newConfigMap, func(cur api.Object) (api.Object, error) {
		cur.(*api.ConfigMap).Data["k"] = "changed"
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the update func's error", err)
	}
	got := &api.ConfigMap{}
	if err := s.Get(c, p+"a", got); err != nil || got.Data["k"] != "1" {
		t.Fatalf("aborted update wrote: %+v %v", got.Data, err)
	}
}

func testDelete(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	obj := cm("a", "1")
	if err := s.Create(c, p+"a", obj, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(c, p+"a", &api.ConfigMap{}, "1"); !errdefs.IsConflict(err) {
		t.Fatalf("delete with wrong rv: got %v, want Conflict", err)
	}
	out := &api.ConfigMap{}
	if err := s.Delete(c, p+"a", out, obj.ResourceVersion); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if out.Data["k"] != "1" {
		t.Fatalf("delete returned %+v, want the last state", out.Data)
	}
	if err := s.Get(c, p+"a", &api.ConfigMap{}); !errdefs.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := s.Delete(c, p+"a", &api.ConfigMap{}, ""); !errdefs.IsNotFound(err) {
		t.Fatalf("second delete: got %v, want NotFound", err)
	}
}

func next(t *testing.T, ch <-chan storage.Event) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		if ev.Type == api.Error {
			t.Fatalf("watch error: %v", ev.Err)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return storage.Event{}
}

func testWatchOrder(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	rev, err := s.Revision(c)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Watch(c, p, rev, newConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	obj := cm("a", "1")
	if err := s.Create(c, p+"a", obj, 0); err != nil {
		t.Fatal(err)
	}
	obj.Data["k"] = "2"
	if err := s.Update(c, p+"a", obj); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(c, p+"a", &api.ConfigMap{}, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		typ api.EventType
		val string
	}{{api.Added, "1"}, {api.Modified, "2"}, {api.Deleted, "2"}} {
		ev := next(t, ch)
		if ev.Type != want.typ || ev.Object.(*api.ConfigMap).Data["k"] != want.val {
			t.Fatalf("event %s %v, want %s with value %s", ev.Type, ev.Object.(*api.ConfigMap).Data, want.typ, want.val)
		}
		if ev.Object.GetObjectMeta().ResourceVersion != strconv.FormatInt(ev.Revision, 10) {
			t.Fatalf("event object rv %s, revision %d", ev.Object.GetObjectMeta().ResourceVersion, ev.Revision)
		}
	}
}

func testWatchResume(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	var revs []string
	for i := 0; i < 5; i++ {
		obj := cm(fmt.Sprintf("o%d", i), "v")
		if err := s.Create(c, p+obj.Name, obj, 0); err != nil {
			t.Fatal(err)
		}
		revs = append(revs, obj.ResourceVersion)
	}
	// Resuming after the second create yields exactly the later three.
	from, _ := strconv.ParseInt(revs[1], 10, 64)
	ch, err := s.Watch(c, p, from, newConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 5; i++ {
		ev := next(t, ch)
		if ev.Type != api.Added || ev.Object.GetObjectMeta().Name != fmt.Sprintf("o%d", i) {
			t.Fatalf("resumed event %s %s, want ADDED o%d", ev.Type, ev.Object.GetObjectMeta().Name, i)
		}
	}
}

func testWatchPrevObject(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	obj := cm("a", "before")
	if err := s.Create(c, p+"a", obj, 0); err != nil {
		t.Fatal(err)
	}
	from, _ := strconv.ParseInt(obj.ResourceVersion, 10, 64)
	ch, err := s.Watch(c, p, from, newConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	obj.Data["k"] = "after"
	if err := s.Update(c, p+"a", obj); err != nil {
		t.Fatal(err)
	}
	ev := next(t, ch)
	if ev.Type != api.Modified || ev.PrevObject == nil || ev.PrevObject.(*api.ConfigMap).Data["k"] != "before" {
		t.Fatalf("modified event without the previous state: %+v", ev)
	}
	// The previous state of a change the watch saw the last of, and of
	// one after a delete and a new create under the same key.
	obj.Data["k"] = "again"
	if err := s.Update(c, p+"a", obj); err != nil {
		t.Fatal(err)
	}
	ev = next(t, ch)
	if ev.Type != api.Modified || ev.PrevObject == nil || ev.PrevObject.(*api.ConfigMap).Data["k"] != "after" ||
		ev.PrevObject.GetObjectMeta().ResourceVersion == ev.Object.GetObjectMeta().ResourceVersion {
		t.Fatalf("second change: previous state %+v, want the first change's", ev.PrevObject)
	}
	if err := s.Delete(c, p+"a", &api.ConfigMap{}, ""); err != nil {
		t.Fatal(err)
	}
	if ev = next(t, ch); ev.Type != api.Deleted {
		t.Fatalf("event %s, want DELETED", ev.Type)
	}
	again := cm("a", "reborn")
	if err := s.Create(c, p+"a", again, 0); err != nil {
		t.Fatal(err)
	}
	again.Data["k"] = "changed"
	if err := s.Update(c, p+"a", again); err != nil {
		t.Fatal(err)
	}
	if ev = next(t, ch); ev.Type != api.Added {
		t.Fatalf("event %s, want ADDED", ev.Type)
	}
	if ev = next(t, ch); ev.Type != api.Modified || ev.PrevObject == nil || ev.PrevObject.(*api.ConfigMap).Data["k"] != "reborn" {
		t.Fatalf("change after a new create: previous state %+v, want the new object's", ev.PrevObject)
	}
}

func testTTL(t *testing.T, s storage.Interface, p string) {
	c := ctx(t)
	obj := cm("a", "1")
	if err := s.Create(c, p+"a", obj, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	obj.Data["k"] = "2"
	if err := s.Update(c, p+"a", obj); err != nil {
		t.Fatalf("update of an object with a TTL: %v", err)
	}
	if err := s.Create(c, p+"forever", cm("forever", "1"), 0); err != nil {
		t.Fatal(err)
	}
	// The store may round the TTL up (etcd has a minimum lease TTL), but the
	// object must be gone well within 30s, update or not.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.Get(c, p+"a", &api.ConfigMap{})
		if errdefs.IsNotFound(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("object with a 2s TTL still there after 30s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := s.Get(c, p+"forever", &api.ConfigMap{}); err != nil {
		t.Fatalf("object without TTL: %v", err)
	}
}
