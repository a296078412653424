package job

import (
	"testing"
	"time"

	"minik8s/pkg/api"
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
