package apiserver

import (
	"context"
	"errors"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

func TestPodOwnersCheck(t *testing.T) {
	store := testStore(t)
	ctx := context.Background()
	funcs := &registry{res: api.FuncsResource, store: store}
	pods := &registry{res: api.PodsResource, store: store}
	yes, no := true, false
	put := func(reg *registry, obj api.Object) {
		t.Helper()
		m := obj.GetObjectMeta()
		if err := store.Create(ctx, reg.key(m.Namespace, m.Name), obj, 0); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, uid, ip string, port int32, owner api.OwnerReference) *api.Pod {
		return &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: uid, OwnerReferences: []api.OwnerReference{owner}},
			Spec:   api.PodSpec{Containers: []api.Container{{Name: "c", Ports: []api.ContainerPort{{Name: function.PortName, ContainerPort: port}}}}},
			Status: api.PodStatus{PodIP: ip}}
	}
	rsRef := func(uid string, controller *bool) api.OwnerReference {
		return api.OwnerReference{Kind: "ReplicaSet", Name: "func-f", UID: uid, Controller: controller}
	}
	put(pods, pod("good", "uid-good", "127.0.0.101", 9000, rsRef("rs-1", &yes)))
	put(pods, pod("other-rs", "uid-other", "127.0.0.102", 9000, rsRef("rs-2", &yes)))
	put(pods, pod("not-controller", "uid-nc", "127.0.0.103", 9000, rsRef("rs-1", &no)))
	put(pods, pod("new-rs", "uid-new", "127.0.0.104", 9000, rsRef("rs-new", &yes)))
	// The stored function's ReplicaSet is rs-new; the callers below hold
	// a copy read before it changed.
	put(funcs, &api.Func{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "f"}, Status: api.FuncStatus{ReplicaSetUID: "rs-new"}})
	stale := &api.Func{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "f"}, Status: api.FuncStatus{ReplicaSetUID: "rs-1"}}
	unset := &api.Func{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "f"}}

	ref := func(name, uid string) *api.ObjectReference {
		return &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, UID: uid}
	}
	addr := func(ip string, port int32, r *api.ObjectReference) api.EndpointAddress {
		return api.EndpointAddress{IP: ip, Port: port, TargetRef: r}
	}
	for _, tc := range []struct {
		name  string
		f     *api.Func
		addr  api.EndpointAddress
		owned bool
	}{
		{"owned pod", stale, addr("127.0.0.101", 9000, ref("good", "uid-good")), true},
		{"owned pod, no uid in ref", stale, addr("127.0.0.101", 9000, ref("good", "")), true},
		{"no target", stale, addr("127.0.0.101", 9000, nil), false},
		{"missing pod", stale, addr("127.0.0.109", 9000, ref("ghost", "")), false},
		{"pod replaced", stale, addr("127.0.0.101", 9000, ref("good", "uid-old")), false},
		{"other namespace", stale, addr("127.0.0.101", 9000, &api.ObjectReference{Kind: "Pod", Namespace: "evil", Name: "good"}), false},
		{"other replicaset", stale, addr("127.0.0.102", 9000, ref("other-rs", "uid-other")), false},
		{"owner not controller", stale, addr("127.0.0.103", 9000, ref("not-controller", "uid-nc")), false},
		{"wrong ip", stale, addr("127.0.0.166", 9000, ref("good", "uid-good")), false},
		{"wrong port", stale, addr("127.0.0.101", 6666, ref("good", "uid-good")), false},
		// The caller's copy of the function is re-read when it disagrees.
		{"replicaset made after the read", unset, addr("127.0.0.104", 9000, ref("new-rs", "uid-new")), true},
		{"replicaset replaced after the read", stale, addr("127.0.0.104", 9000, ref("new-rs", "uid-new")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := newPodOwners(funcs, pods).check(ctx, tc.f, tc.addr)
			if tc.owned && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.owned && !errors.Is(err, errNotOwned) {
				t.Fatalf("got %v, want errNotOwned", err)
			}
		})
	}
}
