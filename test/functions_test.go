package test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"minik8s/controller/functions"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

func startFunctionController(t *testing.T, s *framework.APIServer, cfg functions.Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	f := cache.NewFactory(s.Client)
	ctl := functions.New(s.Client, f, cfg)
	go func() { defer close(done); ctl.Run(ctx, 2) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, within time.Duration, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ptrInt(v int) *int { return &v }

// followScaleDown follows a ReplicaSet's spec.replicas until it reaches
// floor and returns the values it went through. The controller lowers the
// counter only once the ReplicaSet has the previous step, so the pool
// shrinks one step per write: a drop of more than one fails the test.
func followScaleDown(t *testing.T, events <-chan client.Event[*api.ReplicaSet], floor int32, within time.Duration) []int32 {
	t.Helper()
	var seen []int32
	deadline := time.After(within)
	for len(seen) == 0 || seen[len(seen)-1] != floor {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("replicaset watch ended; replicas went %v", seen)
			}
			if ev.Type == api.Deleted || ev.Object.Spec.Replicas == nil {
				continue
			}
			r := *ev.Object.Spec.Replicas
			if n := len(seen); n > 0 {
				if r == seen[n-1] {
					continue
				}
				if seen[n-1]-r > 1 {
					t.Fatalf("replicas dropped from %d to %d in one write (went %v): want one step at a time", seen[n-1], r, seen)
				}
			}
			seen = append(seen, r)
		case <-deadline:
			t.Fatalf("replicas did not reach %d within %s: went %v", floor, within, seen)
		}
	}
	return seen
}

// writeFunc changes a Func read afresh, again if the write raced with the
// controller's own (it writes the status: the revision it made).
func writeFunc(ctx context.Context, t *testing.T, c *client.Client, name string, status bool, change func(*api.Func)) {
	t.Helper()
	for {
		f, err := c.Funcs("default").Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		change(f)
		if status {
			_, err = c.Funcs("default").UpdateStatus(ctx, f)
		} else {
			_, err = c.Funcs("default").Update(ctx, f)
		}
		if err == nil {
			return
		}
		if !errdefs.IsConflict(err) {
			t.Fatal(err)
		}
	}
}

func TestFunctionControllerPoolAndScaleToZero(t *testing.T) {
	s := framework.StartAPIServer(t)
	startFunctionController(t, s, functions.Config{ScaleInterval: time.Second, IdleWindow: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := s.Client
	code := "def run(arg):\n    return arg\n"
	addr := s.ServiceIP("5.5")
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: "echo_fn"},
		Spec: api.FuncSpec{Name: "echo_fn", Function: base64.StdEncoding.EncodeToString([]byte(code)),
			ServiceAddress: addr, MinInstanceNum: ptrInt(0), MaxInstanceNum: ptrInt(3), InitInstanceNum: ptrInt(1)}}
	if _, err := c.Funcs("default").Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	name := function.ObjectName("echo_fn")
	var rs *api.ReplicaSet
	waitFor(t, "the pool", 10*time.Second, func() bool {
		got, err := c.Funcs("default").Get(ctx, "echo_fn")
		if err != nil || got.Status.ReplicaSetUID == "" || got.Status.ServiceUID == "" {
			return false
		}
		rs, err = c.ReplicaSets("default").Get(ctx, name)
		return err == nil && got.Status.ReplicaSetUID == rs.UID && got.Status.Counter == 1
	})
	if *rs.Spec.Replicas != 1 || rs.Spec.Template.Labels[function.LabelFunc] != "echo_fn" ||
		rs.Spec.Template.Spec.Volumes[0].ConfigMap.Name != name {
		t.Fatalf("replicaset: %+v", rs.Spec)
	}
	cm, err := c.ConfigMaps("default").Get(ctx, name)
	if err != nil || cm.Data[function.FileFunction] != code {
		t.Fatalf("code configmap: %+v %v", cm, err)
	}
	svc, err := c.Services("default").Get(ctx, name)
	if err != nil || svc.Spec.ClusterIP != addr || svc.Spec.Selector[function.LabelFunc] != "echo_fn" {
		t.Fatalf("service: %+v %v", svc, err)
	}

	// Follow the ReplicaSet's replicas while the counter goes up and decays.
	events := c.ReplicaSets("default").Watch(ctx, client.ListOptions{FieldSelector: "metadata.name=" + name})
	writeFunc(ctx, t, c, "echo_fn", true, func(f *api.Func) {
		now := time.Now().UTC()
		f.Status.Counter, f.Status.TimeStamp = 3, &now
	})
	seen := followScaleDown(t, events, 0, 30*time.Second)
	// Up to 3, then down to 0 through every step.
	want := []int32{3, 2, 1, 0}
	if len(seen) < 4 || !equalInt32(seen[len(seen)-4:], want) {
		t.Fatalf("replicas went %v, want to end with %v", seen, want)
	}
	got, _ := c.Funcs("default").Get(ctx, "echo_fn")
	if got.Status.Counter != 0 {
		t.Fatalf("counter %d, want 0 (min)", got.Status.Counter)
	}

	// New code: the template changes, pods of the old code are replaced.
	old := &api.Pod{ObjectMeta: api.ObjectMeta{Name: name + "-old", Labels: rs.Spec.Template.Labels}, Spec: rs.Spec.Template.Spec}
	if _, err := c.Pods("default").Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	writeFunc(ctx, t, c, "echo_fn", false, func(f *api.Func) {
		f.Spec.Function = base64.StdEncoding.EncodeToString([]byte("def run(arg):\n    return arg * 2\n"))
	})
	waitFor(t, "new code in the template, configmap and old pod gone", 10*time.Second, func() bool {
		r, err := c.ReplicaSets("default").Get(ctx, name)
		cm, cerr := c.ConfigMaps("default").Get(ctx, name)
		_, perr := c.Pods("default").Get(ctx, name+"-old")
		return err == nil && cerr == nil && r.Spec.Template.Labels[function.LabelCode] != rs.Spec.Template.Labels[function.LabelCode] &&
			cm.Data[function.FileFunction] == "def run(arg):\n    return arg * 2\n" && errdefs.IsNotFound(perr)
	})

	// Deleting the template deletes all it made.
	if _, err := c.Funcs("default").Delete(ctx, "echo_fn", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pool to go", 10*time.Second, func() bool {
		_, e1 := c.ReplicaSets("default").Get(ctx, name)
		_, e2 := c.Services("default").Get(ctx, name)
		_, e3 := c.ConfigMaps("default").Get(ctx, name)
		return errdefs.IsNotFound(e1) && errdefs.IsNotFound(e2) && errdefs.IsNotFound(e3)
	})
}

func TestFunctionControllerV1HasNoPool(t *testing.T) {
	s := framework.StartAPIServer(t)
	startFunctionController(t, s, functions.Config{})
	ctx := context.Background()
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v1"}, ObjectMeta: api.ObjectMeta{Name: "one_shot"},
		Spec: api.FuncSpec{Name: "one_shot", Function: base64.StdEncoding.EncodeToString([]byte("def run(a):\n    return a\n"))}}
	if _, err := s.Client.Funcs("default").Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	name := function.ObjectName("one_shot")
	waitFor(t, "the code configmap", 10*time.Second, func() bool {
		_, err := s.Client.ConfigMaps("default").Get(ctx, name)
		return err == nil
	})
	time.Sleep(500 * time.Millisecond)
	if _, err := s.Client.ReplicaSets("default").Get(ctx, name); !errdefs.IsNotFound(err) {
		t.Fatalf("v1 function has a replicaset: %v", err)
	}
	if _, err := s.Client.Services("default").Get(ctx, name); !errdefs.IsNotFound(err) {
		t.Fatalf("v1 function has a service: %v", err)
	}
}

func equalInt32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
