package test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

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
