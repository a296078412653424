package validation

import (
	"github.com/robfig/cron/v3"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
)

// jobSpec checks a Job's spec (field is its path: "spec", or
// "spec.jobTemplate.spec" in a CronJob, whose Jobs get their selector when
// they are made).
func jobSpec(field string, s *api.JobSpec) error {
	for name, v := range map[string]*int32{"parallelism": s.Parallelism, "completions": s.Completions, "backoffLimit": s.BackoffLimit,
		"ttlSecondsAfterFinished": s.TTLSecondsAfterFinished} {
		if v != nil && *v < 0 {
			return errdefs.Invalid(field+"."+name, "%d must not be negative", *v)
		}
	}
	if d := s.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		return errdefs.Invalid(field+".activeDeadlineSeconds", "%d must be positive", *d)
	}
	if p := s.Template.Spec.RestartPolicy; p != api.RestartPolicyNever && p != api.RestartPolicyOnFailure {
		return errdefs.Invalid(field+".template.spec.restartPolicy", "%q: a Job's pods restart Never or OnFailure", p)
	}
	if err := labelSet(field+".template.metadata.labels", s.Template.Labels); err != nil {
		return err
	}
	if s.Selector != nil {
		sel, err := labels.FromLabelSelector(s.Selector)
		if err != nil {
			return errdefs.Invalid(field+".selector", "%v", err)
		}
		if sel.Empty() || !sel.Matches(s.Template.Labels) {
			return errdefs.Invalid(field+".template.metadata.labels", "labels do not match the selector %q", sel.String())
		}
	}
	return PodSpec(field+".template.spec", &s.Template.Spec)
}

// cronSchedule parses a CronJob's schedule: five fields, or a descriptor
// (@hourly, @daily…, and @every DURATION).
var cronSchedule = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// CronSchedule parses a CronJob's schedule.
func CronSchedule(c *api.CronJob) (cron.Schedule, error) {
	sched, err := cronSchedule.Parse(c.Spec.Schedule)
	if err != nil {
		return nil, errdefs.Invalid("spec.schedule", "%q does not parse: %v", c.Spec.Schedule, err)
	}
	return sched, nil
}

func cronJob(c *api.CronJob) error {
	if _, err := CronSchedule(c); err != nil {
		return err
	}
	switch c.Spec.ConcurrencyPolicy {
	case api.ConcurrencyAllow, api.ConcurrencyForbid, api.ConcurrencyReplace:
	default:
		return errdefs.Invalid("spec.concurrencyPolicy", "%q is not Allow, Forbid or Replace", c.Spec.ConcurrencyPolicy)
	}
	for name, v := range map[string]*int32{"successfulJobsHistoryLimit": c.Spec.SuccessfulJobsHistoryLimit, "failedJobsHistoryLimit": c.Spec.FailedJobsHistoryLimit} {
		if v != nil && *v < 0 {
			return errdefs.Invalid("spec."+name, "%d must not be negative", *v)
		}
	}
	if d := c.Spec.StartingDeadlineSeconds; d != nil && *d < 0 {
		return errdefs.Invalid("spec.startingDeadlineSeconds", "%d must not be negative", *d)
	}
	if len(c.Name) > 52 {
		return errdefs.Invalid("metadata.name", "%q is longer than 52 characters (its Jobs add 11)", c.Name)
	}
	return jobSpec("spec.jobTemplate.spec", &c.Spec.JobTemplate.Spec)
}
