package api

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
)

// Job (batch/v1) runs pods to completion: Completions successful pods,
// Parallelism at a time, giving up after BackoffLimit failed ones or
// ActiveDeadlineSeconds.
type Job struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       JobSpec   `json:"spec,omitempty"`
	Status     JobStatus `json:"status,omitempty"`
}

type JobSpec struct {
	// Parallelism is how many pods run at once (default 1).
	Parallelism *int32 `json:"parallelism,omitempty"`
	// Completions is how many pods must succeed; unset with Parallelism
	// set, the Job is done once one pod succeeded and none runs (a work
	// queue); both unset, 1.
	Completions           *int32 `json:"completions,omitempty"`
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// BackoffLimit is how many failed pods the Job takes before it fails
	// (default 6).
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// Selector is set by the server from the Job's uid unless
	// ManualSelector.
	Selector       *LabelSelector  `json:"selector,omitempty"`
	ManualSelector *bool           `json:"manualSelector,omitempty"`
	Template       PodTemplateSpec `json:"template"`
	// TTLSecondsAfterFinished, when set, deletes the Job (and its pods)
	// that long after it completed or failed.
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	Suspend                 *bool  `json:"suspend,omitempty"`
	// CompletionMode NonIndexed and PodReplacementPolicy
	// TerminatingOrFailed (a pod being deleted is replaced at once) are
	// what the job controller does, and their defaults; the other modes
	// and policies are refused (pkg/api/validation's notacted.go).
	CompletionMode       *batchv1.CompletionMode             `json:"completionMode,omitempty"`
	PodReplacementPolicy *batchv1.PodReplacementPolicy       `json:"podReplacementPolicy,omitempty"`
	ManagedBy            *string                             `json:"managedBy,omitempty"`
	PodFailurePolicy     *batchv1.PodFailurePolicy           `json:"podFailurePolicy,omitempty"`
	SuccessPolicy        *batchv1.SuccessPolicy              `json:"successPolicy,omitempty"`
	BackoffLimitPerIndex *int32                              `json:"backoffLimitPerIndex,omitempty"`
	MaxFailedIndexes     *int32                              `json:"maxFailedIndexes,omitempty"`
	Scheduling           *batchv1.JobSchedulingConfiguration `json:"scheduling,omitempty"`
}

type JobStatus struct {
	Conditions     []JobCondition `json:"conditions,omitempty"`
	StartTime      *time.Time     `json:"startTime,omitempty"`
	CompletionTime *time.Time     `json:"completionTime,omitempty"`
	Active         int32          `json:"active,omitempty"`
	Succeeded      int32          `json:"succeeded,omitempty"`
	Failed         int32          `json:"failed,omitempty"`
	Ready          *int32         `json:"ready,omitempty"`
}

// The conditions of a finished Job and why it failed, as Kubernetes has them.
// SuccessCriteriaMet and FailureTarget come with (in Kubernetes, before)
// Complete and Failed: its validation refuses a status with the latter
// without the former.
const (
	JobComplete           = "Complete"
	JobFailed             = "Failed"
	JobSuccessCriteriaMet = "SuccessCriteriaMet"
	JobFailureTarget      = "FailureTarget"

	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
)

type JobCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	LastProbeTime      *time.Time `json:"lastProbeTime,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
}

type JobList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Job `json:"items"`
}

// Labels the server puts on a Job's pods (and selector), as Kubernetes
// names them; kubectl logs job/NAME reads job-name.
const (
	LabelJobControllerUID = "batch.kubernetes.io/controller-uid"
	LabelJobName          = "batch.kubernetes.io/job-name"
	LabelLegacyUID        = "controller-uid"
	LabelLegacyJobName    = "job-name"
)

// CronJob (batch/v1) makes Jobs on a cron schedule.
type CronJob struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       CronJobSpec   `json:"spec,omitempty"`
	Status     CronJobStatus `json:"status,omitempty"`
}

// The concurrency policies of a CronJob: a run due while the last one
// still runs starts anyway (Allow), is skipped (Forbid) or replaces it.
const (
	ConcurrencyAllow   = "Allow"
	ConcurrencyForbid  = "Forbid"
	ConcurrencyReplace = "Replace"
)

type CronJobSpec struct {
	// Schedule is a cron expression (five fields, or @hourly and the like).
	Schedule string `json:"schedule"`
	// TimeZone is the IANA zone the schedule is read in (the
	// controller's, UTC, when unset).
	TimeZone *string `json:"timeZone,omitempty"`
	// StartingDeadlineSeconds: a run missed by more than this is skipped.
	StartingDeadlineSeconds    *int64          `json:"startingDeadlineSeconds,omitempty"`
	ConcurrencyPolicy          string          `json:"concurrencyPolicy,omitempty"`
	Suspend                    *bool           `json:"suspend,omitempty"`
	JobTemplate                JobTemplateSpec `json:"jobTemplate"`
	SuccessfulJobsHistoryLimit *int32          `json:"successfulJobsHistoryLimit,omitempty"`
	FailedJobsHistoryLimit     *int32          `json:"failedJobsHistoryLimit,omitempty"`
}

type JobTemplateSpec struct {
	ObjectMeta `json:"metadata,omitempty"`
	Spec       JobSpec `json:"spec,omitempty"`
}

type CronJobStatus struct {
	Active             []ObjectReference `json:"active,omitempty"`
	LastScheduleTime   *time.Time        `json:"lastScheduleTime,omitempty"`
	LastSuccessfulTime *time.Time        `json:"lastSuccessfulTime,omitempty"`
}

type CronJobList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []CronJob `json:"items"`
}

// AnnotationScheduledAt is the time a CronJob's Job was due, on the Job.
const AnnotationScheduledAt = "batch.kubernetes.io/cronjob-scheduled-timestamp"
