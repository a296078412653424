package test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/test/framework"
)

// Namespaces as Kubernetes has them: the built-in ones exist, objects go
// only into a namespace that exists and is not terminating, and deleting a
// namespace deletes everything in it, then the namespace.
func TestNamespaceLifecycle(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartControllers(t, s, controller.Config{})
	ctx := context.Background()
	for _, ns := range []string{"default", "kube-system", "kube-public"} {
		if _, err := s.Client.Namespaces().Get(ctx, ns); err != nil {
			t.Errorf("built-in namespace %s: %v", ns, err)
		}
		status, data := httpDo(t, "DELETE", s.URL+"/api/v1/namespaces/"+ns, "", nil)
		if status != http.StatusForbidden {
			t.Errorf("deleting %s: %d %s, want 403", ns, status, data)
		}
	}
	cm := func(name string) *api.ConfigMap {
		return &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
	}
	if _, err := s.Client.ConfigMaps("nowhere").Create(ctx, cm("a")); !errdefs.IsNotFound(err) {
		t.Fatalf("create in a namespace that does not exist: %v, want 404", err)
	}
	if _, err := s.Client.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	// Its default service account comes.
	waitUntil(t, 30*time.Second, "the default service account of team", func() bool {
		_, err := s.Client.ServiceAccounts("team").Get(ctx, "default")
		return err == nil
	})
	for _, n := range []string{"a", "b"} {
		if _, err := s.Client.ConfigMaps("team").Create(ctx, cm(n)); err != nil {
			t.Fatal(err)
		}
	}
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p"}, Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}}}}
	if _, err := s.Client.Pods("team").Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	status, data := httpDo(t, "DELETE", s.URL+"/api/v1/namespaces/team", "", nil)
	if status != http.StatusOK {
		t.Fatalf("deleting team: %d %s", status, data)
	}
	if ns, err := s.Client.Namespaces().Get(ctx, "team"); err == nil && ns.Status.Phase != api.NamespaceTerminating {
		t.Errorf("a deleted namespace reads %q, want Terminating", ns.Status.Phase)
	}
	if _, err := s.Client.ConfigMaps("team").Create(ctx, cm("c")); err != nil && !errdefs.IsForbidden(err) && !errdefs.IsNotFound(err) {
		t.Errorf("create in a terminating namespace: %v, want 403", err)
	} else if err == nil {
		t.Errorf("create in a terminating namespace succeeded")
	}
	waitUntil(t, 60*time.Second, "namespace team to go", func() bool {
		_, err := s.Client.Namespaces().Get(ctx, "team")
		return errdefs.IsNotFound(err)
	})
	for _, res := range []api.Resource{api.ConfigMapsResource, api.PodsResource, api.ServiceAccountsResource} {
		objs, _, err := s.Client.Resource(res, "team").List(ctx, client.ListOptions{})
		if err != nil || len(objs) != 0 {
			t.Errorf("%s left in the deleted namespace: %d (%v)", res.Name, len(objs), err)
		}
	}
}

func waitUntil(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
