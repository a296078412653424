package registry

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/storage/names"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// repeating generates the names it holds, in turn, then fails the test.
type repeating struct {
	t     *testing.T
	names []string
}

func (g *repeating) GenerateName(base string) string {
	if len(g.names) == 0 {
		g.t.Fatalf("more names asked for %q than planned", base)
	}
	n := g.names[0]
	g.names = g.names[1:]
	return n
}

func TestGenerateName(t *testing.T) {
	reg := &Store{Resource: api.ConfigMapsResource, Storage: etcdtest.Start(t)}
	ctx := context.Background()
	cm := func(name, generate string) *api.ConfigMap {
		return &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name, GenerateName: generate}}
	}
	create := func(obj api.Object) (string, error) {
		out, err := reg.Create(ctx, "default", obj)
		if err != nil {
			return "", err
		}
		return out.GetObjectMeta().Name, nil
	}

	t.Run("each create gets a name of its own", func(t *testing.T) {
		a, err1 := create(cm("", "web-"))
		b, err2 := create(cm("", "web-"))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if a == b || !strings.HasPrefix(a, "web-") || len(a) != len("web-")+5 || !strings.HasPrefix(b, "web-") {
			t.Errorf("generated %q and %q, want two names web-XXXXX", a, b)
		}
	})
	t.Run("a name given wins", func(t *testing.T) {
		if got, err := create(cm("mine", "web-")); err != nil || got != "mine" {
			t.Errorf("got %q, %v; want mine", got, err)
		}
	})
	t.Run("a generated name that is taken is generated again", func(t *testing.T) {
		if _, err := create(cm("job-taken", "")); err != nil {
			t.Fatal(err)
		}
		defer func(g names.NameGenerator) { nameGenerator = g }(nameGenerator)
		nameGenerator = &repeating{t: t, names: []string{"job-taken", "job-taken", "job-fresh"}}
		if got, err := create(cm("", "job-")); err != nil || got != "job-fresh" {
			t.Errorf("got %q, %v; want job-fresh", got, err)
		}
	})
	t.Run("a name given that is taken is a conflict, even with the prefix", func(t *testing.T) {
		defer func(g names.NameGenerator) { nameGenerator = g }(nameGenerator)
		nameGenerator = &repeating{t: t} // no name may be generated
		if _, err := create(cm("job-taken", "job-")); !errdefs.IsAlreadyExists(err) {
			t.Errorf("got %v, want AlreadyExists", err)
		}
	})
	t.Run("a name taken eight times is a conflict", func(t *testing.T) {
		defer func(g names.NameGenerator) { nameGenerator = g }(nameGenerator)
		taken := make([]string, generateNameAttempts)
		for i := range taken {
			taken[i] = "job-taken"
		}
		nameGenerator = &repeating{t: t, names: taken}
		if _, err := create(cm("", "job-")); !errdefs.IsAlreadyExists(err) {
			t.Errorf("got %v, want AlreadyExists", err)
		}
	})
	t.Run("an invalid prefix is refused naming the field", func(t *testing.T) {
		_, err := create(cm("", "Not_A_Name-"))
		if !errdefs.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.generateName") {
			t.Errorf("got %v, want Invalid naming metadata.generateName", err)
		}
	})
}

// An object stored before a default was added (a Job's template without
// schedulerName, a pod without a service account) is defaulted when read
// for an update, so its template compares equal and the update passes.
func TestUpdateOfObjectsStoredBeforeDefaults(t *testing.T) {
	store := etcdtest.Start(t)
	ctx := context.Background()
	old := &api.Job{TypeMeta: api.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: api.ObjectMeta{Name: "old", Namespace: "default", UID: "u"},
		Spec: api.JobSpec{Template: api.PodTemplateSpec{Spec: api.PodSpec{RestartPolicy: "Never",
			Containers: []api.Container{{Name: "c", Image: "i"}}}}}}
	if err := store.Create(ctx, keyRoot+"jobs/default/old", old, 0); err != nil {
		t.Fatal(err)
	}
	reg := &Store{Resource: api.JobsResource, Storage: store}
	next := *old
	next.ResourceVersion = ""
	next.Labels = map[string]string{"seen": "yes"}
	if _, err := reg.Update(ctx, "default", "old", &next); err != nil {
		t.Fatalf("labelling a Job stored before the template defaults: %v", err)
	}
}

// A pod's update that names no service account keeps the one the server
// gave it on create (a manifest applied again).
func TestPodUpdateKeepsServiceAccount(t *testing.T) {
	reg := &Store{Resource: api.PodsResource, Storage: etcdtest.Start(t)}
	ctx := context.Background()
	pod := func() *api.Pod {
		return &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}}}}
	}
	created, err := reg.Create(ctx, "default", pod())
	if err != nil {
		t.Fatal(err)
	}
	if sa := created.(*api.Pod).Spec.ServiceAccountName; sa != api.DefaultServiceAccount {
		t.Fatalf("created with service account %q, want default", sa)
	}
	again := pod()
	again.Labels = map[string]string{"applied": "again"}
	updated, err := reg.Update(ctx, "default", "p", again)
	if err != nil {
		t.Fatalf("the manifest applied again: %v", err)
	}
	if p := updated.(*api.Pod); p.Spec.ServiceAccountName != api.DefaultServiceAccount || p.Spec.ServiceAccount != api.DefaultServiceAccount {
		t.Errorf("service account after the update: %q/%q", p.Spec.ServiceAccountName, p.Spec.ServiceAccount)
	}
}
