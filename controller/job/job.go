// Package job runs Jobs to completion: it keeps parallelism pods running
// (no more than the completions still needed), counts the pods that
// succeeded and failed, marks the Job Complete once enough succeeded, or
// Failed past backoffLimit failures or activeDeadlineSeconds (removing
// the pods still running), waits longer after each failure before the
// next pod, and deletes finished Jobs ttlSecondsAfterFinished later.
package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
	"minik8s/pkg/expectations"
	"minik8s/pkg/names"
	"minik8s/pkg/owner"
	"minik8s/pkg/podstatus"
	"minik8s/pkg/workqueue"
)

// Name is the controller's name in logs and --controllers.
const Name = "job"

// Back-off before a new pod after failures, as Kubernetes': 10s, doubling,
// at most 6 minutes.
const (
	backoffBase = 10 * time.Second
	backoffMax  = 6 * time.Minute
)

// API is what the controller writes.
type API interface {
	CreatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error)
	DeletePod(ctx context.Context, namespace, name, uid string) error
	UpdateJobStatus(ctx context.Context, j *api.Job) (*api.Job, error)
	DeleteJob(ctx context.Context, namespace, name, uid string) error
}

var _ API = clientAPI{}

type clientAPI struct{ c *client.Client }

func (a clientAPI) CreatePod(ctx context.Context, pod *api.Pod) (*api.Pod, error) {
	return a.c.Pods(pod.Namespace).Create(ctx, pod)
}

func (a clientAPI) DeletePod(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.Pods(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

func (a clientAPI) UpdateJobStatus(ctx context.Context, j *api.Job) (*api.Job, error) {
	return a.c.Jobs(j.Namespace).UpdateStatus(ctx, j)
}

func (a clientAPI) DeleteJob(ctx context.Context, ns, name, uid string) error {
	_, err := a.c.Jobs(ns).Delete(ctx, name, client.DeleteOptions{UID: uid})
	return err
}

// Controller is the Job controller.
type Controller struct {
	api    API
	jobs   *cache.Lister[api.Job, *api.Job]
	pods   *cache.Lister[api.Pod, *api.Pod]
	queue  *workqueue.Queue
	exp    *expectations.Expectations
	events events.EventRecorder
	now    func() time.Time
}

// New returns the controller, registered with the factory's informers.
func New(c *client.Client, f *cache.Factory, rec events.EventRecorder) *Controller {
	return newController(clientAPI{c}, f.Jobs(), f.Pods(), rec)
}

func newController(a API, jobInf *cache.Informer[api.Job, *api.Job], podInf *cache.Informer[api.Pod, *api.Pod], rec events.EventRecorder) *Controller {
	jc := &Controller{api: a, jobs: jobInf.Lister(), pods: podInf.Lister(), queue: workqueue.New(), exp: expectations.New(), events: rec, now: time.Now}
	enqueue := func(j *api.Job) { jc.queue.Add(cache.Key(j)) }
	jobInf.AddEventHandler(cache.Handler[*api.Job]{OnAdd: enqueue, OnUpdate: func(_, j *api.Job) { enqueue(j) },
		OnDelete: func(j *api.Job) { jc.exp.Forget(cache.Key(j)) }})
	podInf.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd: func(p *api.Pod) {
			if key, ok := jc.owner(p); ok {
				if p.DeletionTimestamp != nil {
					jc.exp.DeletionObserved(key, p.UID)
				} else {
					jc.exp.CreationObserved(key)
				}
				jc.queue.Add(key)
			}
		},
		OnUpdate: func(old, cur *api.Pod) {
			if key, ok := jc.owner(cur); ok {
				if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
					jc.exp.DeletionObserved(key, cur.UID)
				}
				jc.queue.Add(key)
			}
		},
		OnDelete: func(p *api.Pod) {
			if key, ok := jc.owner(p); ok {
				jc.exp.DeletionObserved(key, p.UID)
				jc.queue.Add(key)
			}
		},
	})
	return jc
}

// owner returns the key of the Job controlling the pod.
func (jc *Controller) owner(p *api.Pod) (string, bool) {
	return owner.ControllerKey(&p.ObjectMeta, api.JobsResource.Kind)
}

// Run works the queue until ctx ends.
func (jc *Controller) Run(ctx context.Context, workers int) {
	workqueue.Run(ctx, jc.queue, workers, Name, jc.sync)
}

// counts are a Job's pods by state.
type counts struct {
	active            []*api.Pod
	ready             int32
	succeeded, failed int32 // pods, as status.succeeded and status.failed
	// restarts are the active pods' container restarts: with OnFailure a
	// failing container restarts in its pod, and these count towards
	// backoffLimit (Kubernetes' pastBackoffLimitOnFailure).
	restarts    int32
	lastFailure time.Time
}

func (jc *Controller) count(j *api.Job) counts {
	return countPods(jc.pods.ListNamespace(j.Namespace, nil), j.UID)
}

// countPods counts the pods controlled by the Job of uid.
func countPods(pods []*api.Pod, uid string) counts {
	var c counts
	for _, p := range pods {
		if !owner.IsControlledBy(&p.ObjectMeta, uid) {
			continue
		}
		switch p.Status.Phase {
		case api.PodSucceeded:
			c.succeeded++
		case api.PodFailed:
			c.failed++
			for _, cs := range p.Status.ContainerStatuses {
				if t := cs.State.Terminated; t != nil && t.FinishedAt != nil && t.FinishedAt.After(c.lastFailure) {
					c.lastFailure = *t.FinishedAt
				}
			}
		default:
			if p.DeletionTimestamp != nil {
				continue
			}
			c.active = append(c.active, p)
			if podstatus.IsReady(p) {
				c.ready++
			}
			for _, cs := range p.Status.ContainerStatuses {
				c.restarts += cs.RestartCount
			}
		}
	}
	return c
}

func finished(j *api.Job) (string, *time.Time) {
	for _, c := range j.Status.Conditions {
		if (c.Type == api.JobComplete || c.Type == api.JobFailed) && c.Status == api.ConditionTrue {
			return c.Type, c.LastTransitionTime
		}
	}
	return "", nil
}

func (jc *Controller) sync(ctx context.Context, key string) error {
	ns, name := cache.SplitKey(key)
	cached, ok := jc.jobs.Get(ns, name)
	if !ok || cached.DeletionTimestamp != nil {
		if !ok {
			jc.exp.Forget(key)
		}
		return nil
	}
	j := cache.DeepCopy(cached)
	now := jc.now().UTC().Truncate(time.Second)
	if typ, at := finished(j); typ != "" {
		// Pods whose deletion failed when the Job ended are deleted now.
		return errors.Join(jc.deleteAll(ctx, key, jc.count(j).active), jc.expire(ctx, j, at, now))
	}
	c := jc.count(j)
	st := j.Status
	if st.StartTime == nil {
		st.StartTime = &now
	}
	var errs []error
	switch reason, msg := failure(j, c, now); {
	case reason != "":
		errs = append(errs, jc.deleteAll(ctx, key, c.active))
		c.failed += int32(len(c.active)) // pods stopped unfinished failed, as Kubernetes counts them
		st.Conditions = append(st.Conditions,
			api.JobCondition{Type: api.JobFailureTarget, Status: api.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: &now, LastTransitionTime: &now},
			api.JobCondition{Type: api.JobFailed, Status: api.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: &now, LastTransitionTime: &now})
		events.Eventf(jc.events, j, api.EventTypeWarning, reason, "%s", msg)
		c.active = nil
	case complete(j, c):
		errs = append(errs, jc.deleteAll(ctx, key, c.active))
		c.active = nil
		st.Conditions = append(st.Conditions,
			api.JobCondition{Type: api.JobSuccessCriteriaMet, Status: api.ConditionTrue, Reason: "CompletionsReached", LastProbeTime: &now, LastTransitionTime: &now},
			api.JobCondition{Type: api.JobComplete, Status: api.ConditionTrue, Reason: "CompletionsReached", LastProbeTime: &now, LastTransitionTime: &now})
		st.CompletionTime = &now
		events.Eventf(jc.events, j, api.EventTypeNormal, "Completed", "Job completed")
	default:
		errs = append(errs, jc.manage(ctx, j, &c, now))
	}
	if len(c.active) == 0 {
		c.ready = 0 // only active pods are ready ones; a finished Job's are gone
	}
	st.Active, st.Succeeded, st.Failed, st.Ready = int32(len(c.active)), c.succeeded, c.failed, &c.ready
	if d := j.Spec.ActiveDeadlineSeconds; d != nil && len(st.Conditions) == 0 {
		jc.queue.AddAfter(key, st.StartTime.Add(time.Duration(*d)*time.Second).Sub(now)+time.Second)
	}
	errs = append(errs, jc.writeStatus(ctx, j, st))
	return errors.Join(errs...)
}

// failure says why the Job fails now, if it does: more failed pods than
// backoffLimit, or, with OnFailure, as many restarts (more than none for
// a limit of 0), as Kubernetes judges them.
func failure(j *api.Job, c counts, now time.Time) (string, string) {
	if limit := j.Spec.BackoffLimit; limit != nil {
		onFailure := j.Spec.Template.Spec.RestartPolicy == api.RestartPolicyOnFailure
		if c.failed > *limit || onFailure && c.restarts > 0 && c.restarts >= *limit {
			return api.ReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"
		}
	}
	if d := j.Spec.ActiveDeadlineSeconds; d != nil && j.Status.StartTime != nil && now.Sub(*j.Status.StartTime) >= time.Duration(*d)*time.Second {
		return api.ReasonDeadlineExceeded, "Job was active longer than specified deadline"
	}
	return "", ""
}

// complete says whether enough pods succeeded: completions of them, or
// for a work queue (no completions) one, with none still running.
func complete(j *api.Job, c counts) bool {
	if j.Spec.Completions != nil {
		return c.succeeded >= *j.Spec.Completions
	}
	return c.succeeded > 0 && len(c.active) == 0
}

// manage starts pods up to parallelism (and the completions still
// needed), after the back-off of the last failure, or removes extra ones.
func (jc *Controller) manage(ctx context.Context, j *api.Job, c *counts, now time.Time) error {
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		err := jc.deleteAll(ctx, cache.Key(j), c.active)
		c.active = nil
		return err
	}
	// Until the cache has seen the pods this controller last created or
	// deleted, its count is short of them: acting on it would start more
	// than parallelism (the Job's own status write comes back first).
	if !jc.exp.Satisfied(cache.Key(j)) {
		return nil
	}
	want := int32(1)
	if j.Spec.Parallelism != nil {
		want = *j.Spec.Parallelism
	}
	if j.Spec.Completions != nil {
		want = min(want, *j.Spec.Completions-c.succeeded)
	} else if c.succeeded > 0 {
		want = 0 // a work queue that had a success starts no more
	}
	active := int32(len(c.active))
	if active > want {
		err := jc.deleteAll(ctx, cache.Key(j), c.active[want:])
		c.active = c.active[:want]
		return err
	}
	if active == want {
		return nil
	}
	if c.failed > 0 {
		wait := min(backoffBase<<min(c.failed-1, 10), backoffMax)
		if until := c.lastFailure.Add(wait); until.After(now) {
			jc.queue.AddAfter(cache.Key(j), until.Sub(now))
			return nil
		}
	}
	var errs []error
	jc.exp.ExpectCreations(cache.Key(j), int(want-active))
	for i := active; i < want; i++ {
		p, err := jc.api.CreatePod(ctx, podFor(j))
		if err != nil {
			jc.exp.CreationObserved(cache.Key(j)) // a pod that will never appear
			errs = append(errs, fmt.Errorf("creating a pod of job %s: %w", cache.Key(j), err))
			events.Eventf(jc.events, j, api.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
			continue
		}
		c.active = append(c.active, p)
		events.Eventf(jc.events, j, api.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", p.Name)
	}
	return errors.Join(errs...)
}

// podFor is a new pod of the Job's template.
func podFor(j *api.Job) *api.Pod {
	t := j.Spec.Template
	return &api.Pod{
		ObjectMeta: api.ObjectMeta{
			Name: names.Generate(j.Name + "-"), Namespace: j.Namespace,
			Labels: maps.Clone(t.Labels), Annotations: maps.Clone(t.Annotations),
			OwnerReferences: []api.OwnerReference{owner.ControllerRef(api.JobsResource, j)},
		},
		Spec: t.Spec, // j is the sync's own copy
	}
}

// deleteAll deletes pods of the Job of key.
func (jc *Controller) deleteAll(ctx context.Context, key string, pods []*api.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	jc.exp.ExpectDeletions(key, uids)
	var errs []error
	for _, p := range pods {
		if err := jc.api.DeletePod(ctx, p.Namespace, p.Name, p.UID); err != nil && !errdefs.IsNotFound(err) {
			jc.exp.DeletionObserved(key, p.UID) // a deletion that will never be seen
			errs = append(errs, fmt.Errorf("deleting pod %s: %w", cache.Key(p), err))
		}
	}
	return errors.Join(errs...)
}

// expire deletes a finished Job ttlSecondsAfterFinished after it ended.
func (jc *Controller) expire(ctx context.Context, j *api.Job, at *time.Time, now time.Time) error {
	ttl := j.Spec.TTLSecondsAfterFinished
	if ttl == nil || at == nil {
		return nil
	}
	if due := at.Add(time.Duration(*ttl) * time.Second); due.After(now) {
		jc.queue.AddAfter(cache.Key(j), due.Sub(now))
		return nil
	}
	log.WithField("job", cache.Key(j)).Info("deleting finished job past its ttlSecondsAfterFinished")
	err := jc.api.DeleteJob(ctx, j.Namespace, j.Name, j.UID)
	if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
		return fmt.Errorf("deleting job %s: %w", cache.Key(j), err)
	}
	return nil
}

func (jc *Controller) writeStatus(ctx context.Context, j *api.Job, st api.JobStatus) error {
	if statusEqual(j.Status, st) {
		return nil
	}
	j.Status = st
	_, err := jc.api.UpdateJobStatus(ctx, j)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("updating status of job %s: %w", cache.Key(j), err)
	}
	return nil
}

// statusEqual compares statuses by value (Ready is a pointer).
func statusEqual(a, b api.JobStatus) bool {
	ar, br := int32(-1), int32(-1)
	if a.Ready != nil {
		ar = *a.Ready
	}
	if b.Ready != nil {
		br = *b.Ready
	}
	a.Ready, b.Ready = nil, nil
	return ar == br && reflect.DeepEqual(a, b)
}
