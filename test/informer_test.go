package test

import (
	"context"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/labels"
	"minik8s/test/framework"
)

func informerPod(name string, lbls map[string]string) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Labels: lbls},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "busybox"}}}}
}

func waitCached(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The informer (pkg/client/cache) against a real apiserver: it lists what exists, follows
// creates, updates and deletes, and catches up across an apiserver restart.
func TestInformerWithAPIServer(t *testing.T) {
	srv := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := srv.Client.Pods("default")
	if _, err := pods.Create(ctx, informerPod("before", map[string]string{"app": "web"})); err != nil {
		t.Fatal(err)
	}

	f := cache.NewFactory(srv.Client)
	inf := f.Pods()
	var mu sync.Mutex
	deleted := map[string]bool{}
	inf.AddEventHandler(cache.Handler[*api.Pod]{OnDelete: func(p *api.Pod) {
		mu.Lock()
		deleted[p.Name] = true
		mu.Unlock()
	}})
	f.Start(ctx)
	if !f.WaitForSync(ctx) {
		t.Fatal("not synced")
	}
	l := inf.Lister()
	if _, ok := l.Get("default", "before"); !ok {
		t.Fatal("pod created before the informer started is not in the cache")
	}

	if _, err := pods.Create(ctx, informerPod("after", map[string]string{"app": "db"})); err != nil {
		t.Fatal(err)
	}
	waitCached(t, "created pod in cache", func() bool { _, ok := l.Get("default", "after"); return ok })

	p, _ := l.Get("default", "after")
	up := cache.DeepCopy(p)
	up.Labels["app"] = "web"
	if _, err := pods.Update(ctx, up); err != nil {
		t.Fatal(err)
	}
	web, _ := labels.Parse("app=web")
	waitCached(t, "update in cache", func() bool { return len(l.List(web)) == 2 })

	if _, err := pods.Delete(ctx, "before", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCached(t, "delete in cache", func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := l.Get("default", "before")
		return !ok && deleted["before"]
	})

	// Changes made while the informer cannot reach the apiserver arrive
	// once it is back.
	srv.Stop()
	srv.Start()
	if _, err := pods.Create(ctx, informerPod("restarted", nil)); err != nil {
		t.Fatal(err)
	}
	waitCached(t, "pod created after restart in cache", func() bool { _, ok := l.Get("default", "restarted"); return ok })
}
