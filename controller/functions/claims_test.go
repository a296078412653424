package functions

import (
	"context"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// A warm pod claimed for a function and never adopted by its ReplicaSet
// is removed once its grace is over; one claimed lately, one a ReplicaSet
// controls and a pod never claimed are left alone.
func TestRemoveStrayClaims(t *testing.T) {
	c := startAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctl := New(c, cache.NewFactory(c), Config{})
	now := time.Now()
	ctl.now = func() time.Time { return now }
	ctl.pods.Start(ctx)
	yes := true
	pod := func(name string, claimedAt time.Time, owned bool) {
		p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Labels: map[string]string{function.LabelFunc: "fn", function.LabelCode: "h"}},
			Spec: api.PodSpec{NodeName: "n1", Containers: []api.Container{{Name: "c", Image: "img"}}}}
		if !claimedAt.IsZero() {
			p.Annotations = map[string]string{function.AnnotationClaimed: claimedAt.UTC().Format(time.RFC3339Nano)}
		}
		if owned {
			p.OwnerReferences = []api.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-1", Controller: &yes}}
		}
		if _, err := c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	pod("stray", now.Add(-2*claimGrace), false)
	pod("fresh", now.Add(-claimGrace/2), false)
	pod("adopted", now.Add(-2*claimGrace), true)
	pod("unclaimed", time.Time{}, false)
	deadline := time.Now().Add(20 * time.Second)
	for len(ctl.pods.Lister().ListNamespace("default", nil)) < 4 {
		if time.Now().After(deadline) {
			t.Fatal("pods not cached")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f := &api.Func{ObjectMeta: api.ObjectMeta{Name: "fn", Namespace: "default"}}
	if err := ctl.removeStrayClaims(ctx, "default/fn", f, claimGrace); err != nil {
		t.Fatal(err)
	}
	for name, gone := range map[string]bool{"stray": true, "fresh": false, "adopted": false, "unclaimed": false} {
		p, err := c.Pods("default").Get(ctx, name)
		deleted := errdefs.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil)
		if deleted != gone {
			t.Errorf("pod %s: deleted %v, want %v (%v)", name, deleted, gone, err)
		}
	}
}
