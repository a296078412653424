package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/client/cache/cachetest"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/workqueue"
)

// fakeAPI answers GETs from a map of path -> object and records DELETEs.
type fakeAPI struct {
	mu      sync.Mutex
	objects map[string]api.Object
	deleted []string
	gets    int
}

func (f *fakeAPI) Do(_ context.Context, method, path string, in, out any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch method {
	case http.MethodGet:
		f.gets++
		obj, ok := f.objects[path]
		if !ok {
			return fmt.Errorf("%s: %w", path, errdefs.ErrNotFound)
		}
		data, _ := json.Marshal(obj)
		return json.Unmarshal(data, out)
	case http.MethodDelete:
		f.deleted = append(f.deleted, path)
		return nil
	}
	return fmt.Errorf("unexpected %s %s", method, path)
}

func ownedBy(kind, name, uid string) []api.OwnerReference {
	yes := true
	return []api.OwnerReference{{Kind: kind, Name: name, UID: uid, Controller: &yes}}
}

func TestCollectsOnlyWhenEveryOwnerIsGone(t *testing.T) {
	rsLive := &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "live", UID: "rs-live"}}
	pods := []*api.Pod{
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "of-live", UID: "p1", OwnerReferences: ownedBy("ReplicaSet", "live", "rs-live")}},
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "of-gone", UID: "p2", OwnerReferences: ownedBy("ReplicaSet", "gone", "rs-gone")}},
		// Same name, another uid: the owner was deleted and made again.
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "of-old", UID: "p3", OwnerReferences: ownedBy("ReplicaSet", "live", "rs-old")}},
		// Not in our cache yet, but the apiserver has it.
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "of-new", UID: "p4", OwnerReferences: ownedBy("ReplicaSet", "new", "rs-new")}},
		// A kind minik8s does not serve: kept.
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "of-alien", UID: "p5", OwnerReferences: ownedBy("Widget", "w", "w1")}},
		// Two owners, one alive: kept.
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "of-two", UID: "p6",
			OwnerReferences: append(ownedBy("ReplicaSet", "gone", "rs-gone"), ownedBy("ReplicaSet", "live", "rs-live")...)}},
	}
	fa := &fakeAPI{objects: map[string]api.Object{
		api.ReplicaSetsResource.Path("default", "new"): &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "new", UID: "rs-new"}},
	}}
	podInf := cache.NewInformer[api.Pod](cachetest.NewLW(pods...))
	rsInf := cache.NewInformer[api.ReplicaSet](cachetest.NewLW(rsLive))
	gc := &Controller{c: fa, kinds: map[string]kind{}, queue: workqueue.New()}
	follow(gc, api.PodsResource, podInf)
	follow(gc, api.ReplicaSetsResource, rsInf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	podInf.Start(ctx)
	rsInf.Start(ctx)
	cache.WaitForSync(ctx, podInf, rsInf)

	for _, p := range pods {
		if err := gc.sync(ctx, "pods/default/"+p.Name); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Join(fa.deleted, " ")
	want := api.PodsResource.Path("default", "of-gone") + " " + api.PodsResource.Path("default", "of-old")
	if got != want {
		t.Fatalf("deleted %q\nwant    %q", got, want)
	}
	// Deleting an owner queues what it owned.
	gc.queue = workqueue.New()
	gc.ownerDeleted("rs-live")
	var queued []string
	for gc.queue.Len() > 0 {
		k, _ := gc.queue.Get()
		queued = append(queued, k)
	}
	sort.Strings(queued)
	if got := strings.Join(queued, " "); got != "pods/default/of-live pods/default/of-two" {
		t.Fatalf("queued %q for the deleted owner", got)
	}
}

// TestCollectsStatefulSetClaims: a StatefulSet's claim owned by the pod it
// scaled away (whenScaled Delete) or by the set (whenDeleted Delete) goes
// once that owner is gone, not before; New follows claims.
func TestCollectsStatefulSetClaims(t *testing.T) {
	ref := func(kind, name, uid string) []api.OwnerReference {
		return []api.OwnerReference{{APIVersion: "v1", Kind: kind, Name: name, UID: uid}}
	}
	claims := []*api.PersistentVolumeClaim{
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "www-web-0", UID: "c0", OwnerReferences: ref("StatefulSet", "web", "set")}},
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "www-web-1", UID: "c1", OwnerReferences: ref("Pod", "web-1", "pod-1")}},
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "www-web-2", UID: "c2", OwnerReferences: ref("Pod", "web-2", "pod-2")}},
		{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "www-db-0", UID: "c3", OwnerReferences: ref("StatefulSet", "db", "gone-set")}},
	}
	pods := []*api.Pod{{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "web-2", UID: "pod-2"}}}
	sets := []*api.StatefulSet{{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "web", UID: "set"}}}
	fa := &fakeAPI{objects: map[string]api.Object{}}
	claimInf := cache.NewInformer[api.PersistentVolumeClaim](cachetest.NewLW(claims...))
	podInf := cache.NewInformer[api.Pod](cachetest.NewLW(pods...))
	setInf := cache.NewInformer[api.StatefulSet](cachetest.NewLW(sets...))
	gc := &Controller{c: fa, kinds: map[string]kind{}, queue: workqueue.New()}
	follow(gc, api.PersistentVolumeClaimsResource, claimInf)
	follow(gc, api.PodsResource, podInf)
	follow(gc, api.StatefulSetsResource, setInf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	claimInf.Start(ctx)
	podInf.Start(ctx)
	setInf.Start(ctx)
	cache.WaitForSync(ctx, claimInf, podInf, setInf)
	for _, c := range claims {
		if err := gc.sync(ctx, "persistentvolumeclaims/default/"+c.Name); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Join(fa.deleted, " ")
	want := "/api/v1/namespaces/default/persistentvolumeclaims/www-web-1 /api/v1/namespaces/default/persistentvolumeclaims/www-db-0"
	if got != want {
		t.Fatalf("deleted %q\nwant    %q", got, want)
	}

	real := New(nil, cache.NewFactory(nil))
	if _, ok := real.kinds[api.PersistentVolumeClaimsResource.Name]; !ok {
		t.Error("the collector does not follow persistentvolumeclaims")
	}
}
