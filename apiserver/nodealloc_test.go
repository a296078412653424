package apiserver

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// nodeRegistry is the Nodes registry of a server over a fresh store whose
// pod range is cidr cut in /mask slices.
func nodeRegistry(t *testing.T, cidr string, mask int) *registry.Store {
	t.Helper()
	s := New(Config{ClusterCIDR: cidr, NodeCIDRMaskSize: mask}, etcdtest.Start(t))
	return s.registries[api.NodesResource.Name]
}

func createNode(ctx context.Context, reg *registry.Store, name, podCIDR string) (*api.Node, error) {
	obj, err := reg.Create(ctx, "", &api.Node{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.NodeSpec{PodCIDR: podCIDR}})
	if err != nil {
		return nil, err
	}
	return obj.(*api.Node), nil
}

// TestNodesGetDistinctPodCIDRs: nodes registering at once each get their
// own slice until the range is full; a deleted node's slice is given again.
func TestNodesGetDistinctPodCIDRs(t *testing.T) {
	ctx := context.Background()
	reg := nodeRegistry(t, "127.42.0.0/26", 28) // four slices
	var mu sync.Mutex
	var got []string
	var failed []error
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := createNode(ctx, reg, fmt.Sprintf("node-%d", i), "")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			if len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR {
				t.Errorf("node %s: podCIDR %q podCIDRs %v", n.Name, n.Spec.PodCIDR, n.Spec.PodCIDRs)
			}
			got = append(got, n.Spec.PodCIDR)
		}()
	}
	wg.Wait()
	sort.Strings(got)
	if fmt.Sprint(got) != "[127.42.0.0/28 127.42.0.16/28 127.42.0.32/28 127.42.0.48/28]" {
		t.Fatalf("slices %v, want the four of the range once each", got)
	}
	if len(failed) != 1 || !errdefs.IsConflict(failed[0]) {
		t.Fatalf("the fifth node: %v, want one conflict (the range is full)", failed)
	}
	// The stored nodes hold what the creates answered.
	for i := 0; i < 5; i++ {
		obj, err := reg.Get(ctx, "", fmt.Sprintf("node-%d", i))
		if err != nil {
			continue
		}
		if c := obj.(*api.Node).Spec.PodCIDR; c == "" {
			t.Errorf("stored node-%d has no pod CIDR", i)
		}
	}
	victim, err := reg.Get(ctx, "", "node-0")
	if err != nil {
		victim, _ = reg.Get(ctx, "", "node-1")
	}
	freed := victim.(*api.Node).Spec.PodCIDR
	if _, err := reg.Delete(ctx, "", victim.GetObjectMeta().Name, registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := createNode(ctx, reg, "node-late", "")
	if err != nil || n.Spec.PodCIDR != freed {
		t.Fatalf("a node after a delete: %+v %v, want the freed %s", n, err, freed)
	}
}

// TestNodeAsksForPodCIDR: a node may ask for a free slice; a taken one, one
// of another size, or one outside the range is refused naming the field.
func TestNodeAsksForPodCIDR(t *testing.T) {
	ctx := context.Background()
	reg := nodeRegistry(t, "127.42.0.0/16", 24)
	n, err := createNode(ctx, reg, "a", "127.42.7.0/24")
	if err != nil || n.Spec.PodCIDR != "127.42.7.0/24" {
		t.Fatalf("asked for 127.42.7.0/24: %+v %v", n, err)
	}
	// A malformed CIDR is Kubernetes' validation's to refuse, which names
	// podCIDRs, the list podCIDR is the first of.
	for _, tc := range []struct {
		cidr, field string
		is          func(error) bool
	}{
		{"127.42.7.0/24", "spec.podCIDR", errdefs.IsAlreadyExists},
		{"127.42.8.0/25", "spec.podCIDR", errdefs.IsInvalid},
		{"127.42.8.1/24", "spec.podCIDRs[0]", errdefs.IsInvalid},
		{"127.43.0.0/24", "spec.podCIDR", errdefs.IsInvalid},
		{"nonsense", "spec.podCIDRs[0]", errdefs.IsInvalid},
	} {
		_, err := createNode(ctx, reg, "b", tc.cidr)
		if !tc.is(err) || errdefs.Field(err) != tc.field {
			t.Errorf("asked for %s: %v (field %q)", tc.cidr, err, errdefs.Field(err))
		}
	}
	if _, err := reg.Get(ctx, "", "b"); !errdefs.IsNotFound(err) {
		t.Errorf("a refused node was stored: %v", err)
	}
}

// TestNodeUpdateKeepsPodCIDR: an update without a pod CIDR keeps it (as a
// kubelet re-registering sends), a different one is refused.
func TestNodeUpdateKeepsPodCIDR(t *testing.T) {
	ctx := context.Background()
	reg := nodeRegistry(t, "127.42.0.0/16", 24)
	n, err := createNode(ctx, reg, "a", "")
	if err != nil {
		t.Fatal(err)
	}
	want := n.Spec.PodCIDR
	n.Spec = api.NodeSpec{Unschedulable: true}
	out, err := reg.Update(ctx, "", "a", n)
	if err != nil || out.(*api.Node).Spec.PodCIDR != want || !out.(*api.Node).Spec.Unschedulable {
		t.Fatalf("update without a pod CIDR: %+v %v, want %s kept", out, err, want)
	}
	n = out.(*api.Node)
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "127.42.200.0/24", []string{"127.42.200.0/24"}
	if _, err := reg.Update(ctx, "", "a", n); !errdefs.IsInvalid(err) || errdefs.Field(err) != "spec.podCIDR" {
		t.Fatalf("changing the pod CIDR: %v, want refused on spec.podCIDR", err)
	}
}

// TestPodCIDRRepairAndBackfill: a slice whose node is gone is reclaimed;
// a node stored without a slice gets one.
func TestPodCIDRRepairAndBackfill(t *testing.T) {
	ctx := context.Background()
	reg := nodeRegistry(t, "127.42.0.0/30", 30) // one slice
	a := reg.PodCIDRs
	ghost := &api.Node{ObjectMeta: api.ObjectMeta{Name: "ghost", UID: "uid-ghost"}}
	leaked := a.Item("127.42.0.0/30", ghost)
	if err := reg.Storage.Create(ctx, leaked.Key, leaked.Object, 0); err != nil {
		t.Fatal(err)
	}
	// Stored as a node registered before the cluster had a pod range.
	old := &api.Node{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: api.ObjectMeta{Name: "old", UID: "uid-old"}}
	if err := reg.Storage.Create(ctx, reg.Key("", "old"), old, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Repair(ctx); err != nil || n != 1 {
		t.Fatalf("repair: %d %v, want the ghost's slice reclaimed", n, err)
	}
	if err := reg.AssignMissingPodCIDRs(ctx); err != nil {
		t.Fatal(err)
	}
	obj, err := reg.Get(ctx, "", "old")
	if err != nil || obj.(*api.Node).Spec.PodCIDR != "127.42.0.0/30" {
		t.Fatalf("the old node: %+v %v, want 127.42.0.0/30", obj, err)
	}
	if n, err := a.Repair(ctx); err != nil || n != 0 {
		t.Fatalf("repair after the backfill: %d %v, want nothing reclaimed", n, err)
	}
}
