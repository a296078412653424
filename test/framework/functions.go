package framework

import (
	"context"
	"fmt"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// PublishFunctionPods makes ports the ready endpoints of a function the
// way a cluster does: each is a pod (pod-PORT, IP 127.0.0.1) owned by the
// function's ReplicaSet, which the function's status names. The
// ReplicaSet is made here when no function controller made one.
func (s *APIServer) PublishFunctionPods(t testing.TB, fn string, ports ...int32) {
	t.Helper()
	ctx := context.Background()
	rsUID := s.functionReplicaSet(t, fn)
	yes := true
	ep := &api.Endpoints{ObjectMeta: api.ObjectMeta{Name: function.ObjectName(fn)}}
	sub := api.EndpointSubset{Ports: []api.EndpointPort{{Name: function.PortName, Port: function.ServicePort}}}
	for _, p := range ports {
		name := fmt.Sprintf("pod-%d", p)
		pod := &api.Pod{
			ObjectMeta: api.ObjectMeta{Name: name, Labels: map[string]string{function.LabelFunc: fn},
				OwnerReferences: []api.OwnerReference{{APIVersion: "apps/v1", Kind: api.ReplicaSetsResource.Kind,
					Name: function.ObjectName(fn), UID: rsUID, Controller: &yes}}},
			Spec: api.PodSpec{Containers: []api.Container{{Name: "runtime", Image: "minik8s/python-runtime:latest",
				Ports: []api.ContainerPort{{Name: function.PortName, ContainerPort: p}}}}},
		}
		created, err := s.Client.Pods("default").Create(ctx, pod)
		if errdefs.IsAlreadyExists(err) {
			created, err = s.Client.Pods("default").Get(ctx, name)
		}
		if err != nil {
			t.Fatalf("pod %s: %v", name, err)
		}
		created.Status.Phase = api.PodRunning
		created.Status.PodIP = "127.0.0.1"
		if created, err = s.Client.Pods("default").UpdateStatus(ctx, created); err != nil {
			t.Fatalf("pod %s status: %v", name, err)
		}
		sub.Addresses = append(sub.Addresses, api.EndpointAddress{IP: "127.0.0.1", Port: p, NodeName: "node-a",
			TargetRef: &api.ObjectReference{Kind: api.PodsResource.Kind, Namespace: "default", Name: name, UID: created.UID}})
	}
	ep.Subsets = []api.EndpointSubset{sub}
	s.EnsureNode(t, "node-a", "127.0.0.1")
	s.PutEndpoints(t, ep)
}

// EnsureNode registers a node at ip unless there is one of that name: an
// Endpoints address on the loopback must be a node's.
func (s *APIServer) EnsureNode(t testing.TB, name, ip string) {
	t.Helper()
	node := &api.Node{ObjectMeta: api.ObjectMeta{Name: name},
		Status: api.NodeStatus{Addresses: []api.NodeAddress{{Type: api.NodeInternalIP, Address: ip}}}}
	if _, err := s.Client.Nodes().Create(context.Background(), node); err != nil && !errdefs.IsAlreadyExists(err) {
		t.Fatalf("node %s: %v", name, err)
	}
}

// functionReplicaSet returns the UID of the function's ReplicaSet, making one
// and naming it in the function's status when there is none.
func (s *APIServer) functionReplicaSet(t testing.TB, fn string) string {
	t.Helper()
	ctx := context.Background()
	funcs := s.Client.Funcs("default")
	for {
		f, err := funcs.Get(ctx, fn)
		if err != nil {
			t.Fatalf("func %s: %v", fn, err)
		}
		if f.Status.ReplicaSetUID != "" {
			return f.Status.ReplicaSetUID
		}
		zero := int32(0)
		labels := map[string]string{function.LabelFunc: fn}
		rs := &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: function.ObjectName(fn)}, Spec: api.ReplicaSetSpec{
			Replicas: &zero, Selector: &api.LabelSelector{MatchLabels: labels},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: labels},
				Spec: api.PodSpec{Containers: []api.Container{{Name: "runtime", Image: "minik8s/python-runtime:latest"}}}},
		}}
		created, err := s.Client.ReplicaSets("default").Create(ctx, rs)
		if errdefs.IsAlreadyExists(err) {
			created, err = s.Client.ReplicaSets("default").Get(ctx, rs.Name)
		}
		if err != nil {
			t.Fatalf("replicaset of %s: %v", fn, err)
		}
		f.Status.ReplicaSetUID = created.UID
		if _, err := funcs.UpdateStatus(ctx, f); err == nil {
			return created.UID
		} else if !errdefs.IsConflict(err) {
			t.Fatalf("func %s status: %v", fn, err)
		}
	}
}

// PutEndpoints creates or replaces an Endpoints object in default.
func (s *APIServer) PutEndpoints(t testing.TB, ep *api.Endpoints) {
	t.Helper()
	ctx := context.Background()
	eps := s.Client.Endpoints("default")
	if cur, err := eps.Get(ctx, ep.Name); err == nil {
		cur.Subsets = ep.Subsets
		if _, err := eps.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := eps.Create(ctx, ep); err != nil {
		t.Fatal(err)
	}
}
