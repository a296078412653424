package funcinstancegc

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache/cachetest"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function/call"
)

var t0 = time.Unix(100000, 0)

// inst is an instance named name in phase, completed at done seconds after
// t0 (none if done < 0) and created at created seconds.
func inst(name, phase string, done, created int) *api.FuncInstance {
	c := t0.Add(time.Duration(created) * time.Second)
	fi := &api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name,
		CreationTimestamp: &c, ResourceVersion: "1"},
		Status: api.FuncInstanceStatus{Phase: phase}}
	if done >= 0 {
		d := t0.Add(time.Duration(done) * time.Second)
		fi.Status.CompletionTime = &d
	}
	return fi
}

func names(fis []*api.FuncInstance) []string {
	out := []string{}
	for _, fi := range fis {
		out = append(out, fi.Name)
	}
	return out
}

func TestOverBudget(t *testing.T) {
	const ok, failed, running, pending = api.InstanceSucceeded, api.InstanceFailed, api.InstanceRunning, api.InstancePending
	tests := []struct {
		name   string
		items  []*api.FuncInstance
		budget int
		want   []string
	}{
		{"none", nil, 2, []string{}},
		{"within the budget", []*api.FuncInstance{inst("a", ok, 1, 0), inst("b", failed, 2, 0)}, 2, []string{}},
		{"the oldest finished beyond it",
			[]*api.FuncInstance{inst("c", ok, 30, 0), inst("a", ok, 10, 0), inst("d", failed, 40, 0), inst("b", failed, 20, 0)},
			2, []string{"a", "b"}},
		{"unfinished ones are never chosen nor counted",
			[]*api.FuncInstance{inst("p", pending, -1, 0), inst("r", running, -1, 1), inst("a", ok, 10, 5), inst("b", ok, 20, 5)},
			1, []string{"a"}},
		{"only unfinished ones, far beyond the budget",
			[]*api.FuncInstance{inst("p", pending, -1, 0), inst("q", pending, -1, 0), inst("r", running, -1, 0)}, 1, []string{}},
		{"same completion time: the older creation first",
			[]*api.FuncInstance{inst("x", ok, 10, 9), inst("y", ok, 10, 1), inst("z", ok, 50, 0)}, 1, []string{"y", "x"}},
		{"same times: by name",
			[]*api.FuncInstance{inst("b", ok, 10, 1), inst("a", ok, 10, 1), inst("c", ok, 10, 1)}, 2, []string{"a"}},
		{"no completion time sorts as the oldest",
			[]*api.FuncInstance{inst("a", ok, 10, 0), inst("n", failed, -1, 50)}, 1, []string{"n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(overBudget(tc.items, tc.budget)); !slices.Equal(got, tc.want) {
				t.Errorf("overBudget = %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeStore plays the apiserver's deletes: each is recorded and, unless
// held or failing, reported back on the watch.
type fakeStore struct {
	src *cachetest.LW[*api.FuncInstance]
	mu  sync.Mutex
	// deletes counts the deletes per name; failing makes them fail; held
	// keeps the DELETED events back.
	deletes map[string]int
	failing map[string]bool
	held    []*api.FuncInstance
	hold    bool
}

func (s *fakeStore) del(_ context.Context, fi *api.FuncInstance) error {
	s.mu.Lock()
	s.deletes[fi.Name]++
	if s.failing[fi.Name] {
		delete(s.failing, fi.Name) // fails once
		s.mu.Unlock()
		return fmt.Errorf("etcd is slow: %w", errdefs.ErrUnavailable)
	}
	if s.hold {
		s.held = append(s.held, fi)
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.src.Events <- client.Event[*api.FuncInstance]{Type: api.Deleted, Object: fi}
	return nil
}

func (s *fakeStore) deleted() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.deletes {
		out[k] = v
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The GC deletes the oldest finished instances beyond the budget as they
// come, never an unfinished one, never one twice while its deletion is on
// its way, and again after a failed delete.
func TestControllerKeepsTheBudget(t *testing.T) {
	const ok, running = api.InstanceSucceeded, api.InstanceRunning
	src := cachetest.NewLW[*api.FuncInstance]()
	src.Items = []*api.FuncInstance{inst("old1", ok, 1, 0), inst("old2", ok, 2, 0), inst("new1", ok, 50, 0),
		inst("run1", running, -1, 0), inst("new2", ok, 51, 0)}
	store := &fakeStore{src: src, deletes: map[string]int{}, failing: map[string]bool{"old3": true}}
	c := newController(src, store.del, 2)
	c.retry = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 2) }()
	defer func() { cancel(); <-done }()

	// At start: four finished, budget two.
	waitFor(t, "the first pass", func() bool { d := store.deleted(); return d["old1"] == 1 && d["old2"] == 1 })

	// Deletions on their way: passes in between do not repeat them.
	store.mu.Lock()
	store.hold = true
	store.mu.Unlock()
	src.Events <- client.Event[*api.FuncInstance]{Type: api.Added, Object: inst("new3", ok, 52, 0)}
	waitFor(t, "new1 deleted", func() bool { return store.deleted()["new1"] == 1 })
	for i := 0; i < 5; i++ {
		// A finished instance changes (its callback, say): a pass runs.
		fi := inst("new3", ok, 52, 0)
		fi.ResourceVersion = fmt.Sprint(i + 2)
		src.Events <- client.Event[*api.FuncInstance]{Type: api.Modified, Object: fi}
		src.Events <- client.Event[*api.FuncInstance]{Type: api.Added, Object: inst(fmt.Sprintf("p%d", i), api.InstancePending, -1, 0)}
		time.Sleep(2 * minGap) // let passes run
	}
	store.mu.Lock()
	store.hold = false
	held := store.held
	store.held = nil
	store.mu.Unlock()
	for _, fi := range held {
		src.Events <- client.Event[*api.FuncInstance]{Type: api.Deleted, Object: fi}
	}

	// An instance that ends, and an old one whose first delete fails.
	ended := inst("run1", ok, 60, 0)
	ended.ResourceVersion = "100"
	src.Events <- client.Event[*api.FuncInstance]{Type: api.Modified, Object: ended}
	src.Events <- client.Event[*api.FuncInstance]{Type: api.Added, Object: inst("old3", ok, 3, 0)}
	waitFor(t, "old3 deleted after a failure", func() bool { return store.deleted()["old3"] == 2 })
	waitFor(t, "new2 deleted", func() bool { return store.deleted()["new2"] == 1 })

	got := store.deleted()
	for name, n := range got {
		if n > 1 && name != "old3" {
			t.Errorf("%s deleted %d times", name, n)
		}
	}
	for _, name := range []string{"run1", "new3", "p0", "p1", "p2", "p3", "p4"} {
		if got[name] != 0 {
			t.Errorf("%s deleted; want it kept (deletes %v)", name, got)
		}
	}
	// The informer hears of the last deletes a moment after the store.
	waitFor(t, "7 instances left (new3, run1 and five pending)", func() bool { return c.instances.Lister().Len() == 7 })
}

func TestSlimDropsThePayload(t *testing.T) {
	fi := inst("a", api.InstanceSucceeded, 1, 0)
	fi.Spec.Function, fi.Spec.Arg = "fn", "big argument"
	fi.Status.Result, fi.Status.Error = "big result", "an error"
	fi.Status.Steps = []api.FuncStepRecord{{Function: "fn", Result: "big result"}}
	fi.Status.Next = &api.FuncStep{Function: "fn", Arg: "x"}
	fi.Status.Callback = &api.FuncCallbackStatus{Delivered: true}
	call.Slim(fi)
	want := inst("a", api.InstanceSucceeded, 1, 0)
	want.Spec.Function = "fn"
	if fmt.Sprintf("%+v", *fi) != fmt.Sprintf("%+v", *want) {
		t.Errorf("slim kept %+v, want %+v", *fi, *want)
	}
}
