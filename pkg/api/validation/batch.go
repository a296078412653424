package validation

import (
	"strings"
	"time"
	_ "time/tzdata" // zones without the node's database

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// cronSchedule parses a CronJob's schedule: five fields, or a descriptor
// (@hourly, @daily…, and @every DURATION).
var cronSchedule = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// CronSchedule parses a CronJob's schedule.
// Its times are in its timeZone (the controller's, UTC, when unset).
func CronSchedule(c *api.CronJob) (cron.Schedule, error) {
	spec := c.Spec.Schedule
	if tz := c.Spec.TimeZone; tz != nil {
		if strings.Contains(spec, "TZ=") {
			return nil, errdefs.Invalid("spec.schedule", "%q names a zone: with spec.timeZone set, it may not", spec)
		}
		if _, err := time.LoadLocation(*tz); err != nil || *tz == "" || strings.EqualFold(*tz, "Local") {
			return nil, errdefs.Invalid("spec.timeZone", "%q is not a time zone of the IANA database", *tz)
		}
		spec = "CRON_TZ=" + *tz + " " + spec
	}
	sched, err := cronSchedule.Parse(spec)
	if err != nil {
		return nil, errdefs.Invalid("spec.schedule", "%q does not parse: %v", c.Spec.Schedule, err)
	}
	return sched, nil
}

// notDoneJob is the reason a refusal of a Job's field gives.
const notDoneJob = "minik8s's job controller does not do this, and the Job would run other than asked"

// jobNotDone refuses the Job fields of modes the job controller does not
// run: indexed completions, failure and success policies, replacement only
// once a pod has failed, another controller's Jobs.
func jobNotDone(path *field.Path, s *api.JobSpec) field.ErrorList {
	r := &refusals{at: path, why: notDoneJob}
	if m := s.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion {
		r.errs = append(r.errs, field.NotSupported(path.Child("completionMode"), *m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion}))
	}
	if p := s.PodReplacementPolicy; p != nil && *p != batchv1.TerminatingOrFailed {
		r.errs = append(r.errs, field.NotSupported(path.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.TerminatingOrFailed}))
	}
	if m := s.ManagedBy; m != nil && *m != batchv1.JobControllerName {
		r.errs = append(r.errs, field.NotSupported(path.Child("managedBy"), *m, []string{batchv1.JobControllerName}))
	}
	r.forbid(s.PodFailurePolicy != nil, "podFailurePolicy", "every failed pod counts against backoffLimit")
	r.forbid(s.SuccessPolicy != nil, "successPolicy", "a Job succeeds when its completions have")
	r.forbid(s.BackoffLimitPerIndex != nil, "backoffLimitPerIndex", "Jobs are not indexed")
	r.forbid(s.MaxFailedIndexes != nil, "maxFailedIndexes", "Jobs are not indexed")
	r.forbid(s.Scheduling != nil, "scheduling", "a Job's pods are scheduled one by one")
	return r.errs
}
