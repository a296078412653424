package funcrunner

import (
	"context"
	"errors"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// TestPodOwnersCheck: a call goes only to a pod the function's ReplicaSet
// controls, at the pod's IP and http port, whether the caches know the
// pods and the function's latest ReplicaSet or only the apiserver does.
func TestPodOwnersCheck(t *testing.T) {
	yes, no := true, false
	pod := func(name, uid, ip string, port int32, owner api.OwnerReference) *api.Pod {
		return &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: uid, OwnerReferences: []api.OwnerReference{owner}},
			Spec:   api.PodSpec{Containers: []api.Container{{Name: "c", Ports: []api.ContainerPort{{Name: function.PortName, ContainerPort: port}}}}},
			Status: api.PodStatus{PodIP: ip}}
	}
	rsRef := func(uid string, controller *bool) api.OwnerReference {
		return api.OwnerReference{Kind: "ReplicaSet", Name: "func-f", UID: uid, Controller: controller}
	}
	pods := []*api.Pod{
		pod("good", "uid-good", "127.0.0.101", 9000, rsRef("rs-1", &yes)),
		pod("other-rs", "uid-other", "127.0.0.102", 9000, rsRef("rs-2", &yes)),
		pod("not-controller", "uid-nc", "127.0.0.103", 9000, rsRef("rs-1", &no)),
		pod("new-rs", "uid-new", "127.0.0.104", 9000, rsRef("rs-new", &yes)),
	}
	// The stored function's ReplicaSet is rs-new; the callers below hold
	// a copy read before it changed.
	stored := &api.Func{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "f"}, Status: api.FuncStatus{ReplicaSetUID: "rs-new"}}
	stale := &api.Func{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "f"}, Status: api.FuncStatus{ReplicaSetUID: "rs-1"}}
	unset := &api.Func{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "f"}}

	ref := func(name, uid string) *api.ObjectReference {
		return &api.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, UID: uid}
	}
	addr := func(ip string, port int32, r *api.ObjectReference) api.EndpointAddress {
		return api.EndpointAddress{IP: ip, Port: port, TargetRef: r}
	}
	cases := []struct {
		name  string
		f     *api.Func
		addr  api.EndpointAddress
		owned bool
	}{
		{"owned pod", stale, addr("127.0.0.101", 9000, ref("good", "uid-good")), true},
		{"owned pod, no uid in ref", stale, addr("127.0.0.101", 9000, ref("good", "")), true},
		{"no target", stale, addr("127.0.0.101", 9000, nil), false},
		{"target not a pod", stale, addr("127.0.0.101", 9000, &api.ObjectReference{Kind: "Node", Name: "good"}), false},
		{"missing pod", stale, addr("127.0.0.109", 9000, ref("ghost", "")), false},
		{"pod replaced", stale, addr("127.0.0.101", 9000, ref("good", "uid-old")), false},
		{"other namespace", stale, addr("127.0.0.101", 9000, &api.ObjectReference{Kind: "Pod", Namespace: "evil", Name: "good"}), false},
		{"other replicaset", stale, addr("127.0.0.102", 9000, ref("other-rs", "uid-other")), false},
		{"owner not controller", stale, addr("127.0.0.103", 9000, ref("not-controller", "uid-nc")), false},
		{"wrong ip", stale, addr("127.0.0.166", 9000, ref("good", "uid-good")), false},
		{"wrong port", stale, addr("127.0.0.101", 6666, ref("good", "uid-good")), false},
		// The caller's copy of the function is not the last word.
		{"replicaset made after the read", unset, addr("127.0.0.104", 9000, ref("new-rs", "uid-new")), true},
		{"replicaset replaced after the read", stale, addr("127.0.0.104", 9000, ref("new-rs", "uid-new")), true},
	}
	for _, mode := range []struct {
		name   string
		cached bool // the informers hold the pods and the stored function
	}{{"cached", true}, {"apiserver only", false}} {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			for _, p := range pods {
				if mode.cached {
					e.putPod(p)
				} else {
					e.api.put(p, api.PodsResource)
				}
			}
			if mode.cached {
				e.putFunc(stored)
			} else {
				e.api.put(stored, api.FuncsResource)
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					o := newPodOwners(e.s)
					reads := len(e.api.log())
					err := o.check(context.Background(), tc.f, tc.addr)
					if tc.owned && err != nil {
						t.Fatalf("refused: %v", err)
					}
					// What the caches show owned needs no request.
					if n := len(e.api.log()) - reads; mode.cached && tc.owned && n != 0 {
						t.Errorf("%d apiserver requests for a pod the caches show owned", n)
					}
					if !tc.owned && !errors.Is(err, errNotOwned) {
						t.Fatalf("got %v, want errNotOwned", err)
					}
					if bad := o.knownBad(tc.f, tc.addr); bad == tc.owned {
						t.Errorf("knownBad %v after the check", bad)
					}
				})
			}
		})
	}
}

// A verdict read from the apiserver holds until the caches change: a pod
// the cache did not have yet is checked once, and checked again from the
// cache once it has it.
func TestPodOwnersVerdictFollowsCache(t *testing.T) {
	e := newEnv(t, Config{})
	yes := true
	f := &api.Func{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "f"}, Status: api.FuncStatus{ReplicaSetUID: "rs-1"}}
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-p",
		OwnerReferences: []api.OwnerReference{{Kind: "ReplicaSet", UID: "rs-1", Controller: &yes}}},
		Status: api.PodStatus{PodIP: "127.0.0.1"}}
	a := api.EndpointAddress{IP: "127.0.0.1", Port: 9000, TargetRef: &api.ObjectReference{Kind: "Pod", Name: "p", UID: "uid-p"}}
	gets := func() int {
		n := 0
		for _, r := range e.api.log() {
			if r == "GET "+api.PodsResource.Path("default", "p") {
				n++
			}
		}
		return n
	}
	o := newPodOwners(e.s)
	// Not in the apiserver yet: not owned, and known so without asking again.
	if err := o.check(context.Background(), f, a); !errors.Is(err, errNotOwned) {
		t.Fatalf("missing pod: %v", err)
	}
	if !o.knownBad(f, a) || gets() != 1 {
		t.Fatalf("knownBad %v after %d reads", o.knownBad(f, a), gets())
	}
	if err := o.check(context.Background(), f, a); !errors.Is(err, errNotOwned) || gets() != 1 {
		t.Fatalf("second check: %v after %d reads", err, gets())
	}
	// The pod reaches the apiserver, and the cache in an older version
	// (no IP yet): the verdict no longer holds, the apiserver is asked.
	stale := *p
	stale.Status.PodIP = ""
	e.putPod(&stale)
	e.api.put(p, api.PodsResource)
	if o.knownBad(f, a) {
		t.Fatal("a verdict outlived the change of the cache")
	}
	if err := o.check(context.Background(), f, a); err != nil || gets() != 2 {
		t.Fatalf("pod in the apiserver: %v after %d reads", err, gets())
	}
	// The cache catches up: it answers alone.
	e.putPod(p)
	if err := o.check(context.Background(), f, a); err != nil || gets() != 2 {
		t.Fatalf("pod in the cache: %v after %d reads", err, gets())
	}
}
