// Package cronjob makes the Jobs of CronJobs on their schedules: the most
// recent run due (missed ones are not made up for, nor one later than
// startingDeadlineSeconds), as concurrencyPolicy allows while an earlier
// Job still runs (Allow: anyway, Forbid: not, Replace: in its place), and
// keeps successfulJobsHistoryLimit finished Jobs that completed and
// failedJobsHistoryLimit that failed.
package cronjob

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/owner"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "cronjob"

// API is what the controller writes.
type API interface {
	CreateJob(ctx context.Context, j *api.Job) (*api.Job, error)
	DeleteJob(ctx context.Context, namespace, name, uid string) error
	UpdateCronJobStatus(ctx context.Context, c *api.CronJob) (*api.CronJob, error)
}

var _ API = clientAPI{}

type clientAPI struct{ c *client.Client }

func (a clientAPI) CreateJob(ctx context.Context, j *api.Job) (*api.Job, error) {
	return a.c.Jobs(j.Namespace).Create(ctx, j)
}

func (a clientAPI) DeleteJob(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.Jobs(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

func (a clientAPI) UpdateCronJobStatus(ctx context.Context, c *api.CronJob) (*api.CronJob, error) {
	return a.c.CronJobs(c.Namespace).UpdateStatus(ctx, c)
}

// Controller is the CronJob controller.
type Controller struct {
	api    API
	crons  *cache.Lister[api.CronJob, *api.CronJob]
	jobs   *cache.Lister[api.Job, *api.Job]
	queue  *workqueue.Queue
	events events.EventRecorder
	now    func() time.Time
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory, rec events.EventRecorder) *Controller {
	cronInf, jobInf := f.CronJobs(), f.Jobs()
	cc := &Controller{api: clientAPI{c}, crons: cronInf.Lister(), jobs: jobInf.Lister(), queue: workqueue.New(), events: rec, now: time.Now}
	enqueue := func(c *api.CronJob) { cc.queue.Add(cache.Key(c)) }
	cronInf.AddEventHandler(cache.Handler[*api.CronJob]{OnAdd: enqueue, OnUpdate: func(_, c *api.CronJob) { enqueue(c) }})
	jobInf.AddEventHandler(cache.ControllerHandler[*api.Job](api.CronJobsResource.Kind, cc.queue.Add))
	return cc
}

// Run works the queue until ctx ends.
func (cc *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, cc.queue, workers, Name, cc.sync)
}

// jobState is a Job's end: "" while it runs.
func jobState(j *api.Job) (string, *time.Time) {
	for _, c := range j.Status.Conditions {
		if (c.Type == api.JobComplete || c.Type == api.JobFailed) && c.Status == api.ConditionTrue {
			return c.Type, c.LastTransitionTime
		}
	}
	return "", nil
}

func (cc *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	cached, ok := cc.crons.Get(ns, name)
	if !ok || cached.DeletionTimestamp != nil {
		return nil
	}
	c := cache.DeepCopy(cached)
	now := cc.now().UTC()
	var active, complete, failed []*api.Job
	for _, j := range cc.jobs.ListNamespace(ns, nil) {
		if !owner.IsControlledBy(&j.ObjectMeta, c.UID) {
			continue
		}
		switch state, _ := jobState(j); state {
		case "":
			active = append(active, j)
		case api.JobComplete:
			complete = append(complete, j)
		default:
			failed = append(failed, j)
		}
	}
	st := c.Status
	var errs []error
	if made, err := cc.run(ctx, c, &st, active, now); err != nil {
		errs = append(errs, err)
	} else if made != nil {
		active = append(active, made)
	}
	st.Active = nil
	for _, j := range active {
		if j.DeletionTimestamp == nil {
			st.Active = append(st.Active, api.ObjectReference{APIVersion: api.JobsResource.GroupVersion(), Kind: api.JobsResource.Kind,
				Namespace: j.Namespace, Name: j.Name, UID: j.UID})
		}
	}
	for _, j := range complete {
		if _, at := jobState(j); at != nil && (st.LastSuccessfulTime == nil || at.After(*st.LastSuccessfulTime)) {
			st.LastSuccessfulTime = at
		}
	}
	errs = append(errs, cc.prune(ctx, complete, c.Spec.SuccessfulJobsHistoryLimit), cc.prune(ctx, failed, c.Spec.FailedJobsHistoryLimit))
	if !reflect.DeepEqual(st, c.Status) {
		c.Status = st
		if _, err := cc.api.UpdateCronJobStatus(ctx, c); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("updating status of cronjob %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// run makes the Job of the most recent run due, if any and as the
// concurrency policy allows, and looks again at the next one.
func (cc *Controller) run(ctx context.Context, c *api.CronJob, st *api.CronJobStatus, active []*api.Job, now time.Time) (*api.Job, error) {
	sched, err := validation.CronSchedule(c)
	if err != nil {
		return nil, nil // validation refuses such a schedule
	}
	since := *c.CreationTimestamp
	if st.LastScheduleTime != nil {
		since = *st.LastScheduleTime
	}
	var due time.Time
	for t, n := sched.Next(since), 0; !t.After(now) && n < 1000; t, n = sched.Next(t), n+1 {
		due = t // missed runs are not made up for: the latest one counts
	}
	cc.queue.AddAfter(cache.Key(c), sched.Next(now).Sub(now)+10*time.Millisecond)
	if due.IsZero() || (c.Spec.Suspend != nil && *c.Spec.Suspend) {
		return nil, nil
	}
	if d := c.Spec.StartingDeadlineSeconds; d != nil && now.Sub(due) > time.Duration(*d)*time.Second {
		st.LastScheduleTime = &due
		events.Eventf(cc.events, c, api.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", due.Format(time.RFC3339))
		return nil, nil
	}
	if len(active) > 0 {
		switch c.Spec.ConcurrencyPolicy {
		case api.ConcurrencyForbid:
			// Made once the running one ends, if still within the deadline.
			events.Eventf(cc.events, c, api.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return nil, nil
		case api.ConcurrencyReplace:
			for _, j := range active {
				if err := cc.api.DeleteJob(ctx, j.Namespace, j.Name, j.UID); err != nil && !errdefs.IsNotFound(err) {
					return nil, fmt.Errorf("replacing job %s: %w", j.Name, err)
				}
				events.Eventf(cc.events, c, api.EventTypeNormal, "SuccessfulDelete", "Deleted job %s", j.Name)
			}
		}
	}
	j, err := cc.api.CreateJob(ctx, jobFor(c, due))
	switch {
	case errdefs.IsAlreadyExists(err):
		st.LastScheduleTime = &due
		return nil, nil
	case err != nil:
		events.Eventf(cc.events, c, api.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return nil, fmt.Errorf("creating the job of cronjob %s: %w", cache.Key(c), err)
	}
	st.LastScheduleTime = &due
	events.Eventf(cc.events, c, api.EventTypeNormal, "SuccessfulCreate", "Created job %s", j.Name)
	log.WithFields(log.Fields{"cronjob": cache.Key(c), "job": j.Name}).Info("job created")
	return j, nil
}

// jobFor is the Job of a run due at t, named after it (in minutes since
// the epoch as Kubernetes names them; in seconds for @every schedules,
// which may run more than once a minute).
func jobFor(c *api.CronJob, t time.Time) *api.Job {
	stamp := t.Unix() / 60
	if strings.HasPrefix(c.Spec.Schedule, "@every") {
		stamp = t.Unix()
	}
	tmpl := c.Spec.JobTemplate
	annotations := maps.Clone(tmpl.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[api.AnnotationScheduledAt] = t.UTC().Format(time.RFC3339)
	return &api.Job{
		ObjectMeta: api.ObjectMeta{Name: c.Name + "-" + strconv.FormatInt(stamp, 10), Namespace: c.Namespace,
			Labels: maps.Clone(tmpl.Labels), Annotations: annotations,
			OwnerReferences: []api.OwnerReference{owner.ControllerRef(api.CronJobsResource, c)}},
		Spec: tmpl.Spec, // c is the sync's own copy
	}
}

// prune deletes the oldest finished Jobs beyond limit.
func (cc *Controller) prune(ctx context.Context, jobs []*api.Job, limit *int32) error {
	keep := 0
	if limit != nil {
		keep = int(*limit)
	}
	if len(jobs) <= keep {
		return nil
	}
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].CreationTimestamp.Before(*jobs[k].CreationTimestamp) })
	var errs []error
	for _, j := range jobs[:len(jobs)-keep] {
		if err := cc.api.DeleteJob(ctx, j.Namespace, j.Name, j.UID); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting old job %s: %w", j.Name, err))
		}
	}
	return errors.Join(errs...)
}
