package job

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/client/cache/cachetest"
)

func jobPod(uid, phase string, restarts int32) *api.Pod {
	yes := true
	return &api.Pod{
		ObjectMeta: api.ObjectMeta{Name: "p", OwnerReferences: []api.OwnerReference{{Kind: "Job", Name: "j", UID: uid, Controller: &yes}}},
		Status:     api.PodStatus{Phase: phase, ContainerStatuses: []api.ContainerStatus{{Name: "work", RestartCount: restarts}}},
	}
}

// The pods of a Job are counted by phase; other Jobs' pods are not, and
// only an active pod's restarts count as restarts.
func TestCountPods(t *testing.T) {
	pods := []*api.Pod{
		jobPod("j1", api.PodSucceeded, 0),
		jobPod("j1", api.PodFailed, 2),
		jobPod("j1", api.PodFailed, 0),
		jobPod("j1", api.PodRunning, 3),
		jobPod("j1", api.PodPending, 1),
		jobPod("other", api.PodFailed, 5),
	}
	c := countPods(pods, "j1")
	if len(c.active) != 2 || c.succeeded != 1 || c.failed != 2 || c.restarts != 4 {
		t.Fatalf("active %d succeeded %d failed %d restarts %d, want 2 1 2 4", len(c.active), c.succeeded, c.failed, c.restarts)
	}
}

// backoffLimit is judged as Kubernetes does: failed pods past the limit,
// or with OnFailure as many container restarts as the limit.
func TestFailure(t *testing.T) {
	now := time.Unix(1000, 0)
	job := func(policy string, limit int32, deadline int64) *api.Job {
		j := &api.Job{Spec: api.JobSpec{BackoffLimit: &limit,
			Template: api.PodTemplateSpec{Spec: api.PodSpec{RestartPolicy: policy}}}}
		if deadline > 0 {
			start := now.Add(-time.Duration(deadline) * time.Second)
			j.Spec.ActiveDeadlineSeconds, j.Status.StartTime = &deadline, &start
		}
		return j
	}
	for _, tc := range []struct {
		name   string
		job    *api.Job
		c      counts
		reason string
	}{
		{"never, failures up to the limit", job(api.RestartPolicyNever, 2, 0), counts{failed: 2}, ""},
		{"never, one past the limit", job(api.RestartPolicyNever, 2, 0), counts{failed: 3}, api.ReasonBackoffLimitExceeded},
		{"never, restarts do not count", job(api.RestartPolicyNever, 2, 0), counts{restarts: 9}, ""},
		{"onfailure, restarts below the limit", job(api.RestartPolicyOnFailure, 2, 0), counts{restarts: 1}, ""},
		{"onfailure, restarts at the limit", job(api.RestartPolicyOnFailure, 2, 0), counts{restarts: 2}, api.ReasonBackoffLimitExceeded},
		{"onfailure, limit 0, no restart", job(api.RestartPolicyOnFailure, 0, 0), counts{}, ""},
		{"onfailure, limit 0, one restart", job(api.RestartPolicyOnFailure, 0, 0), counts{restarts: 1}, api.ReasonBackoffLimitExceeded},
		{"deadline reached", job(api.RestartPolicyNever, 6, 30), counts{}, api.ReasonDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if reason, _ := failure(tc.job, tc.c, now); reason != tc.reason {
				t.Fatalf("reason %q, want %q", reason, tc.reason)
			}
		})
	}
}

// fakeAPI records the pods the controller creates and deletes.
type fakeAPI struct {
	mu      sync.Mutex
	created []*api.Pod
	deleted []string
}

func (f *fakeAPI) CreatePod(_ context.Context, p *api.Pod) (*api.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p = cache.DeepCopy(p)
	p.UID = fmt.Sprintf("uid-%d", len(f.created))
	f.created = append(f.created, p)
	return p, nil
}

func (f *fakeAPI) DeletePod(_ context.Context, _, _, uid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, uid)
	return nil
}

func (f *fakeAPI) UpdateJobStatus(_ context.Context, j *api.Job) (*api.Job, error) { return j, nil }
func (f *fakeAPI) DeleteJob(context.Context, string, string, string) error         { return nil }

func (f *fakeAPI) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.created), len(f.deleted)
}

// A sync that runs before the cache has seen the pods the last one
// created (the Job's own status write comes back first) starts none:
// a Job of parallelism 2 never has more than 2 pods.
func TestSyncWaitsForItsOwnCreations(t *testing.T) {
	two, five := int32(2), int32(5)
	j := &api.Job{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "j", UID: "job-uid"},
		Spec: api.JobSpec{Parallelism: &two, Completions: &five}}
	jobs, pods := cachetest.NewLW(j), cachetest.NewLW[*api.Pod]()
	jobInf, podInf := cache.NewInformer[api.Job](jobs), cache.NewInformer[api.Pod](pods)
	fake := &fakeAPI{}
	jc := newController(fake, jobInf, podInf, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobInf.Start(ctx)
	podInf.Start(ctx)
	if !cache.WaitForSync(ctx, jobInf, podInf) {
		t.Fatal("informers did not sync")
	}
	sync := func() {
		t.Helper()
		if err := jc.sync(ctx, "default/j"); err != nil {
			t.Fatal(err)
		}
	}
	seen := func(typ api.EventType, p *api.Pod) {
		t.Helper()
		pods.Events <- client.Event[*api.Pod]{Type: typ, Object: p}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			got, ok := jc.pods.Get(p.Namespace, p.Name)
			if typ != api.Deleted && ok && got.Status.Phase == p.Status.Phase {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cache never saw %s %s", typ, p.Name)
			}
		}
	}

	sync()
	sync() // the cache has not seen the two pods yet
	if created, _ := fake.counts(); created != 2 {
		t.Fatalf("created %d pods before the cache saw the first two, want 2", created)
	}
	first, second := cache.DeepCopy(fake.created[0]), cache.DeepCopy(fake.created[1])
	seen(api.Added, first)
	sync() // one of two seen: still waiting
	if created, _ := fake.counts(); created != 2 {
		t.Fatalf("created %d pods with one creation unseen, want 2", created)
	}
	seen(api.Added, second)
	sync()
	if created, _ := fake.counts(); created != 2 {
		t.Fatalf("created %d pods with two running, want 2", created)
	}
	first.Status.Phase = api.PodSucceeded
	seen(api.Modified, first)
	sync()
	sync()
	if created, _ := fake.counts(); created != 3 {
		t.Fatalf("created %d pods after one succeeded, want 3", created)
	}
}
