package test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"minik8s/apiserver"
	"minik8s/test/framework"
)

// TestClientGoInformer: a client-go shared informer on pods (the informer
// controllers, k9s and operators run) lists, then watches, and sees every
// add, update and delete, across a restart of the apiserver.
func TestClientGoInformer(t *testing.T) {
	s := framework.StartAPIServer(t)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	seen := map[string][]string{} // pod name -> events
	record := func(what string, obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				p, _ = d.Obj.(*corev1.Pod)
			}
		}
		if p == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen[p.Name] = append(seen[p.Name], what+":"+p.Labels["step"])
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { record("add", o) },
		UpdateFunc: func(_, o any) { record("update", o) },
		DeleteFunc: func(o any) { record("delete", o) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer never synced")
	}
	pods := cs.CoreV1().Pods("default")
	pod := func(name, step string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"step": step}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	}
	relabel := func(name, step string) {
		t.Helper()
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Labels["step"] = step
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(name string, events ...string) {
		t.Helper()
		waitUntil(t, 30*time.Second, fmt.Sprintf("the informer seeing %s: %v", name, events), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprint(seen[name]) == fmt.Sprint(events)
		})
	}

	if _, err := pods.Create(ctx, pod("a", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	relabel("a", "2")
	want("a", "add:1", "update:2")

	// The apiserver goes away and comes back: the informer's watch ends,
	// and it resumes from the last version it saw.
	s.Restart()
	if _, err := pods.Create(ctx, pod("b", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	relabel("a", "3")
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want("a", "add:1", "update:2", "update:3")
	want("b", "add:1", "delete:1")
	if got, err := factory.Core().V1().Pods().Lister().Pods("default").Get("a"); err != nil || got.Labels["step"] != "3" {
		t.Errorf("the informer's cache has pod a as %v (%v)", got, err)
	}
}

// TestClientGoWatchBookmarks: a client-go watch that allows bookmarks gets
// one at least every BookmarkInterval, at the version of the latest change
// even when its selector let that change through to no one, so that it
// resumes from there rather than from an old (soon compacted) version.
func TestClientGoWatchBookmarks(t *testing.T) {
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) { c.BookmarkInterval = 200 * time.Millisecond })
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cms := cs.CoreV1().ConfigMaps("default")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "app=none", AllowWatchBookmarks: true, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	other, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unselected"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := strconv.ParseInt(other.ResourceVersion, 10, 64)
	for ev := range w.ResultChan() {
		if ev.Type != watch.Bookmark {
			t.Fatalf("the watch of app=none got %s %v", ev.Type, ev.Object)
		}
		rv, _ := strconv.ParseInt(ev.Object.(*corev1.ConfigMap).ResourceVersion, 10, 64)
		if rv >= want {
			return
		}
	}
	t.Fatalf("no bookmark at version %d or later before the watch ended: %v", want, ctx.Err())
}

// TestClientGoOpenAPIV2: client-go's discovery reads the OpenAPI v2
// document (protobuf), with every kind's definition.
func TestClientGoOpenAPIV2(t *testing.T) {
	s := framework.StartAPIServer(t)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := cs.Discovery().OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]bool{}
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		defs[d.GetName()] = true
	}
	for _, want := range []string{"io.minik8s.api.Pod", "io.minik8s.api.ReplicaSet", "io.minik8s.api.Func"} {
		if !defs[want] {
			t.Errorf("OpenAPI v2 lacks %s (has %d definitions)", want, len(defs))
		}
	}
}
