package upstream

// The options Kubernetes' strategies (pkg/registry, v1.37) derive for their
// validation, copied where the strategies keep them unexported.

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacvalidation "k8s.io/kubernetes/pkg/apis/rbac/validation"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"
)

type featureName = featuregate.Feature

// jobOptions is pkg/registry/batch/job's validationOptionsForJob.
func jobOptions(newJob, oldJob *batch.Job) batchvalidation.JobValidationOptions {
	var newTemplate, oldTemplate *core.PodTemplateSpec
	if newJob != nil {
		newTemplate = &newJob.Spec.Template
	}
	if oldJob != nil {
		oldTemplate = &oldJob.Spec.Template
	}
	opts := batchvalidation.JobValidationOptions{
		PodValidationOptions:  podutil.GetValidationOptionsFromPodTemplate(newTemplate, oldTemplate),
		RequirePrefixedLabels: true,
	}
	if oldJob != nil {
		opts.AllowInvalidLabelValueInSelector = opts.AllowInvalidLabelValueInSelector || metav1validation.LabelSelectorHasInvalidLabelValue(oldJob.Spec.Selector)
		suspended := oldJob.Spec.Suspend != nil && *oldJob.Spec.Suspend
		notStarted := oldJob.Status.StartTime == nil
		opts.AllowMutableSchedulingDirectives = suspended && notStarted
		mutableTemplate := suspended && (notStarted || batchvalidation.IsConditionTrue(oldJob.Status.Conditions, batch.JobSuspended)) && oldJob.Status.Active == 0
		if utilfeature.DefaultFeatureGate.Enabled(features.MutablePodResourcesForSuspendedJobs) {
			opts.AllowMutablePodResources = mutableTemplate
		}
		if utilfeature.DefaultFeatureGate.Enabled(features.MutableSchedulingDirectivesForSuspendedJobs) {
			opts.AllowMutableSchedulingDirectives = mutableTemplate
		}
		_, hadJobName := oldJob.Spec.Template.Labels[batch.JobNameLabel]
		_, hadControllerUID := oldJob.Spec.Template.Labels[batch.ControllerUidLabel]
		opts.RequirePrefixedLabels = hadJobName && hadControllerUID
	}
	return opts
}

// jobStatusOptions is pkg/registry/batch/job's getStatusValidationOptions.
func jobStatusOptions(newJob, oldJob *batch.Job) batchvalidation.JobStatusValidationOptions {
	if !utilfeature.DefaultFeatureGate.Enabled(features.JobManagedBy) {
		return batchvalidation.JobStatusValidationOptions{}
	}
	isIndexed := ptr.Deref(newJob.Spec.CompletionMode, batch.NonIndexedCompletion) == batch.IndexedCompletion
	finishedChanged := batchvalidation.IsJobFinished(oldJob) != batchvalidation.IsJobFinished(newJob)
	completeChanged := batchvalidation.IsJobComplete(oldJob) != batchvalidation.IsJobComplete(newJob)
	failedChanged := batchvalidation.IsJobFailed(oldJob) != batchvalidation.IsJobFailed(newJob)
	failureTargetChanged := batchvalidation.IsConditionTrue(oldJob.Status.Conditions, batch.JobFailureTarget) != batchvalidation.IsConditionTrue(newJob.Status.Conditions, batch.JobFailureTarget)
	successCriteriaChanged := batchvalidation.IsConditionTrue(oldJob.Status.Conditions, batch.JobSuccessCriteriaMet) != batchvalidation.IsConditionTrue(newJob.Status.Conditions, batch.JobSuccessCriteriaMet)
	completedIndexesChanged := oldJob.Status.CompletedIndexes != newJob.Status.CompletedIndexes
	failedIndexesChanged := !ptr.Equal(oldJob.Status.FailedIndexes, newJob.Status.FailedIndexes)
	activeChanged := oldJob.Status.Active != newJob.Status.Active
	startTimeChanged := !ptr.Equal(oldJob.Status.StartTime, newJob.Status.StartTime)
	completionTimeChanged := !ptr.Equal(oldJob.Status.CompletionTime, newJob.Status.CompletionTime)
	uncountedChanged := !apiequality.Semantic.DeepEqual(oldJob.Status.UncountedTerminatedPods, newJob.Status.UncountedTerminatedPods)
	readyChanged := !ptr.Equal(oldJob.Status.Ready, newJob.Status.Ready)
	terminatingChanged := !ptr.Equal(oldJob.Status.Terminating, newJob.Status.Terminating)
	suspendedWithZeroCompletions := ptr.Equal(newJob.Spec.Suspend, ptr.To(true)) && ptr.Equal(newJob.Spec.Completions, ptr.To[int32](0))
	resuming := batchvalidation.IsConditionTrue(oldJob.Status.Conditions, batch.JobSuspended) &&
		batchvalidation.IsConditionFalse(newJob.Status.Conditions, batch.JobSuspended)
	return batchvalidation.JobStatusValidationOptions{
		RejectDecreasingSucceededCounter:             !isIndexed || !ptr.Equal(newJob.Spec.Completions, newJob.Spec.Parallelism),
		RejectDecreasingFailedCounter:                true,
		RejectDisablingTerminalCondition:             true,
		RejectInvalidCompletedIndexes:                completedIndexesChanged,
		RejectInvalidFailedIndexes:                   failedIndexesChanged,
		RejectCompletedIndexesForNonIndexedJob:       completedIndexesChanged,
		RejectFailedIndexesForNoBackoffLimitPerIndex: failedIndexesChanged,
		RejectFailedIndexesOverlappingCompleted:      failedIndexesChanged || completedIndexesChanged,
		RejectFailedJobWithoutFailureTarget:          failedChanged || failedIndexesChanged,
		RejectCompleteJobWithoutSuccessCriteriaMet:   completeChanged || successCriteriaChanged,
		RejectFinishedJobWithActivePods:              finishedChanged || activeChanged,
		RejectFinishedJobWithoutStartTime:            (finishedChanged || startTimeChanged) && !suspendedWithZeroCompletions,
		RejectFinishedJobWithUncountedTerminatedPods: finishedChanged || uncountedChanged,
		RejectStartTimeUpdateForUnsuspendedJob:       startTimeChanged && !resuming,
		RejectCompletionTimeBeforeStartTime:          startTimeChanged || completionTimeChanged,
		RejectMutatingCompletionTime:                 true,
		RejectNotCompleteJobWithCompletionTime:       completeChanged || completionTimeChanged,
		RejectCompleteJobWithoutCompletionTime:       completeChanged || completionTimeChanged,
		RejectCompleteJobWithFailedCondition:         completeChanged || failedChanged,
		RejectCompleteJobWithFailureTargetCondition:  completeChanged || failureTargetChanged,
		RejectMoreReadyThanActivePods:                readyChanged || activeChanged,
		RejectFinishedJobWithTerminatingPods:         finishedChanged || terminatingChanged,
	}
}

// hpaOptions is pkg/registry/autoscaling/horizontalpodautoscaler's
// validationOptionsForHorizontalPodAutoscaler.
func hpaOptions(newHPA, oldHPA *autoscaling.HorizontalPodAutoscaler) autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions {
	opts := autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions{
		MinReplicasLowerBound:           1,
		ScaleTargetRefValidationOptions: autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{RequiredCoveredByDeclarative: true},
		ObjectMetricsValidationOptions:  autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{AllowEmptyAPIGroup: true},
	}
	oldZero := oldHPA != nil && oldHPA.Spec.MinReplicas != nil && *oldHPA.Spec.MinReplicas == 0
	if utilfeature.DefaultFeatureGate.Enabled(features.HPAScaleToZero) || oldZero {
		opts.MinReplicasLowerBound = 0
	}
	switch {
	case oldHPA != nil && oldHPA.Spec.ScaleTargetRef.APIVersion == newHPA.Spec.ScaleTargetRef.APIVersion && oldHPA.Spec.ScaleTargetRef.Kind == newHPA.Spec.ScaleTargetRef.Kind:
		opts.ScaleTargetRefValidationOptions.AllowInvalidAPIVersion = true
	case newHPA.Spec.ScaleTargetRef.Kind == "ReplicationController":
		opts.ScaleTargetRefValidationOptions.AllowEmptyAPIGroup = true
	}
	if oldHPA != nil {
		for _, m := range oldHPA.Spec.Metrics {
			if m.Type == autoscaling.ObjectMetricSourceType && m.Object != nil {
				if autoscalingvalidation.ValidateAPIVersion(m.Object.DescribedObject, opts.ObjectMetricsValidationOptions) != nil {
					opts.ObjectMetricsValidationOptions.AllowInvalidAPIVersion = true
					break
				}
			}
		}
	}
	return opts
}

// hpaDeclarativeOptions: scale to zero is allowed where the gate is on or
// the HPA already had minReplicas 0.
func hpaDeclarativeOptions(obj, old runtime.Object) map[string]bool {
	zero := utilfeature.DefaultFeatureGate.Enabled(features.HPAScaleToZero)
	if o, ok := old.(*autoscalingv2.HorizontalPodAutoscaler); ok && o.Spec.MinReplicas != nil && *o.Spec.MinReplicas == 0 {
		zero = true
	}
	return map[string]bool{string(features.HPAScaleToZero): zero}
}

// clusterRoleOptions: an aggregation selector already invalid may stay.
func clusterRoleOptions(old *rbac.ClusterRole) rbacvalidation.ClusterRoleValidationOptions {
	var opts rbacvalidation.ClusterRoleValidationOptions
	if old.AggregationRule != nil {
		for _, s := range old.AggregationRule.ClusterRoleSelectors {
			if len(metav1validation.ValidateLabelSelector(&s, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
				opts.AllowInvalidLabelValueInSelector = true
			}
		}
	}
	return opts
}
