package test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

func pythonJob(name, script string, completions, parallelism, backoffLimit int32) *api.Job {
	return &api.Job{
		ObjectMeta: api.ObjectMeta{Name: name},
		Spec: api.JobSpec{Completions: &completions, Parallelism: &parallelism, BackoffLimit: &backoffLimit,
			Template: api.PodTemplateSpec{Spec: api.PodSpec{RestartPolicy: api.RestartPolicyNever, Containers: []api.Container{{
				Name: "work", Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", script},
			}}}}},
	}
}

// TestJobs: a Job of five completions, two at a time, completes with
// never more than two pods running; one whose pods fail stops at its
// backoffLimit, Failed with the reason, and so does one whose container
// restarts in its pod (OnFailure); kubectl get jobs shows them.
func TestJobs(t *testing.T) {
	t.Parallel()
	cl := framework.StartCluster(t, controller.Config{}, "job", 2, 88)
	cl.Containerd.ImportPythonRuntime(t)
	s := cl.APIServer
	ctx := context.Background()

	// The most pods of the Job running at once, as a watch sees them.
	var mu sync.Mutex
	running, most := map[string]bool{}, 0
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	events := s.Client.Pods("default").Watch(wctx, client.ListOptions{LabelSelector: api.LabelLegacyJobName + "=five"})
	go func() {
		for ev := range events {
			mu.Lock()
			p := ev.Object
			running[p.Name] = ev.Type != api.Deleted && p.DeletionTimestamp == nil && p.Status.Phase != api.PodSucceeded && p.Status.Phase != api.PodFailed
			n := 0
			for _, r := range running {
				if r {
					n++
				}
			}
			most = max(most, n)
			mu.Unlock()
		}
	}()
	if _, err := s.Client.Jobs("default").Create(ctx, pythonJob("five", "import time; time.sleep(0.5)", 5, 2, 6)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Jobs("default").Create(ctx, pythonJob("fails", "raise SystemExit(3)", 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	restarts := pythonJob("restarts", "raise SystemExit(3)", 1, 1, 1)
	restarts.Spec.Template.Spec.RestartPolicy = api.RestartPolicyOnFailure
	if _, err := s.Client.Jobs("default").Create(ctx, restarts); err != nil {
		t.Fatal(err)
	}
	var five, fails *api.Job
	waitUntil(t, 2*time.Minute, "the three jobs finished", func() bool {
		var err error
		five, err = s.Client.Jobs("default").Get(ctx, "five")
		if err != nil {
			return false
		}
		fails, err = s.Client.Jobs("default").Get(ctx, "fails")
		if err != nil {
			return false
		}
		restarts, err = s.Client.Jobs("default").Get(ctx, "restarts")
		return err == nil && len(five.Status.Conditions) > 0 && len(fails.Status.Conditions) > 0 && len(restarts.Status.Conditions) > 0
	})
	if c := lastCondition(five.Status); c.Type != api.JobComplete || five.Status.Succeeded != 5 || five.Status.Active != 0 || five.Status.CompletionTime == nil {
		t.Errorf("job five: %+v", five.Status)
	}
	mu.Lock()
	if most > 2 || most == 0 {
		t.Errorf("job five ran %d pods at once, want 2 at most", most)
	}
	mu.Unlock()
	if c := lastCondition(fails.Status); c.Type != api.JobFailed || c.Reason != api.ReasonBackoffLimitExceeded || fails.Status.Failed != 2 {
		t.Errorf("job fails: %+v", fails.Status)
	}
	// One pod, restarted once (the limit), then stopped: one failed pod.
	if c := lastCondition(restarts.Status); c.Type != api.JobFailed || c.Reason != api.ReasonBackoffLimitExceeded || restarts.Status.Failed != 1 || restarts.Status.Active != 0 {
		t.Errorf("job restarts: %+v", restarts.Status)
	}
	out := mustKubectl(t, s, "five", "get", "jobs")
	for _, want := range []string{"Complete", "5/5", "Failed", "0/1"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get jobs lacks %q:\n%s", want, out)
		}
	}
	if code, out, errOut := mk(t, "--server", s.URL, "describe", "job", "fails"); code != 0 || !strings.Contains(out, "BackoffLimitExceeded") {
		t.Errorf("mkctl describe job fails: %d\n%s%s", code, out, errOut)
	}
	// The README's comma list of kinds: a table per kind with objects,
	// names prefixed by their kind.
	if code, out, errOut := mk(t, "--server", s.URL, "get", "jobs,cronjobs"); code != 0 || !strings.Contains(out, "job/five ") ||
		!strings.Contains(out, "Complete") || strings.Contains(out, "cronjob") {
		t.Errorf("mkctl get jobs,cronjobs: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mk(t, "--server", s.URL, "get", "jobs,pods", "-o", "name"); code != 0 || !strings.Contains(out, "job/five\n") ||
		!strings.Contains(out, "pod/five-") {
		t.Errorf("mkctl get jobs,pods -o name: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := mk(t, "--server", s.URL, "get", "jobs,pods", "-w"); code == 0 || !strings.Contains(errOut, "-w watches one kind") {
		t.Errorf("mkctl get jobs,pods -w: %d\n%s%s", code, out, errOut)
	}
}

// TestCronJobs: a CronJob runs on its schedule and keeps its last two
// completed Jobs; one whose Job runs longer than its period, Forbid, never
// has two Jobs at once.
func TestCronJobs(t *testing.T) {
	cl := framework.StartCluster(t, controller.Config{}, "cron", 1, 90)
	cl.Containerd.ImportPythonRuntime(t)
	s := cl.APIServer
	ctx := context.Background()
	cron := func(name, schedule, script, policy string) *api.CronJob {
		two := int32(2)
		j := pythonJob(name, script, 1, 1, 0)
		return &api.CronJob{ObjectMeta: api.ObjectMeta{Name: name},
			Spec: api.CronJobSpec{Schedule: schedule, ConcurrencyPolicy: policy, SuccessfulJobsHistoryLimit: &two,
				JobTemplate: api.JobTemplateSpec{Spec: j.Spec}}}
	}
	if _, err := s.Client.CronJobs("default").Create(ctx, cron("tick", "@every 2s", "pass", api.ConcurrencyAllow)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CronJobs("default").Create(ctx, cron("slow", "@every 1s", "import time; time.sleep(600)", api.ConcurrencyForbid)); err != nil {
		t.Fatal(err)
	}
	owned := func(cj string) (jobs []*api.Job) {
		all, _, err := s.Client.Jobs("default").List(ctx, client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range all {
			if len(j.OwnerReferences) > 0 && j.OwnerReferences[0].Name == cj {
				jobs = append(jobs, j)
			}
		}
		return jobs
	}
	var made int
	seen := map[string]bool{}
	// Allow lets runs overlap (a loaded machine runs them longer than the
	// 2 s period), so only the completed Jobs are bounded: two kept. Were
	// they never pruned, each run would add one and this would not hold.
	waitUntil(t, 90*time.Second, "four runs of tick, two completed kept", func() bool {
		jobs := owned("tick")
		completed := 0
		for _, j := range jobs {
			seen[j.Name] = true
			if len(j.Status.Conditions) > 0 && lastCondition(j.Status).Type == api.JobComplete {
				completed++
			}
		}
		made = len(seen)
		return made >= 4 && completed <= 2
	})
	if slow := owned("slow"); len(slow) != 1 {
		t.Errorf("slow, Forbid, has %d jobs: want its one running job only", len(slow))
	}
	cj, err := s.Client.CronJobs("default").Get(ctx, "tick")
	if err != nil || cj.Status.LastScheduleTime == nil || cj.Status.LastSuccessfulTime == nil {
		t.Errorf("tick's status: %v %+v", err, cj.Status)
	}
	out := mustKubectl(t, s, "@every 2s", "get", "cronjobs")
	if !strings.Contains(out, "slow") || !strings.Contains(out, "LAST SCHEDULE") {
		t.Errorf("kubectl get cronjobs:\n%s", out)
	}
}

// lastCondition is the condition a Job ended with: Complete or Failed,
// after SuccessCriteriaMet or FailureTarget, as Kubernetes lists them.
func lastCondition(st api.JobStatus) api.JobCondition {
	return st.Conditions[len(st.Conditions)-1]
}
