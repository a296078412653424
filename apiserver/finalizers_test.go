package apiserver

import (
	"context"
	"sync"
	"testing"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/storage"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// raceDelete is a store in which, just before the first delete, another
// writer adds a finalizer to the object being deleted.
type raceDelete struct {
	storage.Interface
	once sync.Once
}

func (s *raceDelete) Delete(ctx context.Context, key string, out api.Object, rv string) error {
	var err error
	s.once.Do(func() {
		_, err = s.GuaranteedUpdate(ctx, key, func() api.Object { return &api.ConfigMap{} }, func(cur api.Object) (api.Object, error) {
			m := cur.GetObjectMeta()
			m.Finalizers = append(m.Finalizers, "example.com/keep")
			return cur, nil
		})
	})
	if err != nil {
		return err
	}
	return s.Interface.Delete(ctx, key, out, rv)
}

// A finalizer added between the delete's read and its write keeps the
// object: the delete is judged again at the new version.
func TestDeleteJudgesFinalizersAddedMeanwhile(t *testing.T) {
	ctx := context.Background()
	store := &raceDelete{Interface: etcdtest.Start(t)}
	reg := newTestServer(t, store, "").registries[api.ConfigMapsResource.Name]
	cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "c", UID: "uid-c"}}
	if err := store.Create(ctx, reg.Key("default", "c"), cm, 0); err != nil {
		t.Fatal(err)
	}
	out, err := reg.Delete(ctx, "default", "c", registry.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := out.GetObjectMeta(); m.DeletionTimestamp == nil || len(m.Finalizers) != 1 {
		t.Fatalf("delete answered %+v, want the object kept with its finalizer and a deletion timestamp", m)
	}
	var got api.ConfigMap
	if err := store.Get(ctx, reg.Key("default", "c"), &got); err != nil {
		t.Fatalf("the object with a finalizer is gone: %v", err)
	}
	if got.DeletionTimestamp == nil {
		t.Fatal("the object kept has no deletion timestamp")
	}
}
