// Package conversion turns objects between the versions a kind is served
// in and the one it is stored in, as Kubernetes' conversions do.
package conversion

import (
	"encoding/json"
	"maps"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// What autoscaling/v1 has no field for rides in annotations, as in
// Kubernetes, so that an HPA read and written back in v1 loses nothing
// autoscaling/v2 set: the metrics other than CPU utilization, their
// current values, the conditions and the behavior.
const (
	MetricSpecsAnnotation    = "autoscaling.alpha.kubernetes.io/metrics"
	MetricStatusesAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	ConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	BehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

// HPAToV1 is h as autoscaling/v1 shows it; h is not changed.
func HPAToV1(h *api.HorizontalPodAutoscaler) *api.HorizontalPodAutoscalerV1 {
	out := &api.HorizontalPodAutoscalerV1{TypeMeta: api.TypeMeta{APIVersion: "autoscaling/v1", Kind: h.Kind}, ObjectMeta: h.ObjectMeta}
	if out.Kind == "" {
		out.Kind = "HorizontalPodAutoscaler"
	}
	ref := h.Spec.ScaleTargetRef
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    h.Spec.MinReplicas, MaxReplicas: h.Spec.MaxReplicas,
	}
	annotations := map[string]string{}
	var others []autoscalingv1.MetricSpec
	for _, m := range h.Spec.Metrics {
		if r := m.Resource; r != nil && r.Name == api.ResourceCPU && r.Target.Type == api.MetricUtilization &&
			r.Target.AverageUtilization != nil && out.Spec.TargetCPUUtilizationPercentage == nil {
			out.Spec.TargetCPUUtilizationPercentage = r.Target.AverageUtilization
			continue
		}
		others = append(others, metricToV1(m))
	}
	setJSON(annotations, MetricSpecsAnnotation, others)
	if h.Spec.Behavior != nil {
		setJSON(annotations, BehaviorAnnotation, h.Spec.Behavior)
	}

	st := h.Status
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{ObservedGeneration: st.ObservedGeneration,
		LastScaleTime: metaTime(st.LastScaleTime), CurrentReplicas: st.CurrentReplicas, DesiredReplicas: st.DesiredReplicas}
	var current []autoscalingv1.MetricStatus
	for _, m := range st.CurrentMetrics {
		if r := m.Resource; r != nil && r.Name == api.ResourceCPU && r.Current.AverageUtilization != nil && out.Status.CurrentCPUUtilizationPercentage == nil {
			out.Status.CurrentCPUUtilizationPercentage = r.Current.AverageUtilization
			continue
		}
		current = append(current, metricStatusToV1(m))
	}
	setJSON(annotations, MetricStatusesAnnotation, current)
	var conds []autoscalingv1.HorizontalPodAutoscalerCondition
	for _, c := range st.Conditions {
		conds = append(conds, autoscalingv1.HorizontalPodAutoscalerCondition{Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type),
			Status: corev1.ConditionStatus(c.Status), LastTransitionTime: derefTime(c.LastTransitionTime), Reason: c.Reason, Message: c.Message})
	}
	setJSON(annotations, ConditionsAnnotation, conds)
	if len(annotations) > 0 {
		// The stored object's map is shared: the copy gets its own.
		out.Annotations = maps.Clone(h.Annotations)
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		maps.Copy(out.Annotations, annotations)
	}
	return out
}

// HPAFromV1 is an HPA written in autoscaling/v1 in the stored form. What
// the annotations carry is read back (and the annotations dropped); one
// that does not decode is refused, naming it.
func HPAFromV1(in *api.HorizontalPodAutoscalerV1) (*api.HorizontalPodAutoscaler, error) {
	if in.APIVersion != "" && in.APIVersion != "autoscaling/v1" {
		return nil, errdefs.BadRequest("apiVersion", "%q is not autoscaling/v1, the version of this route", in.APIVersion)
	}
	out := &api.HorizontalPodAutoscaler{ObjectMeta: in.ObjectMeta}
	out.Annotations = maps.Clone(in.Annotations)
	ref := in.Spec.ScaleTargetRef
	out.Spec = api.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: api.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion},
		MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	var others []autoscalingv1.MetricSpec
	if err := takeJSON(out.Annotations, MetricSpecsAnnotation, &others); err != nil {
		return nil, err
	}
	for _, m := range others {
		out.Spec.Metrics = append(out.Spec.Metrics, metricFromV1(m))
	}
	if t := in.Spec.TargetCPUUtilizationPercentage; t != nil {
		out.Spec.Metrics = append(out.Spec.Metrics, api.MetricSpec{Type: api.MetricSourceResource, Resource: &api.ResourceMetricSource{
			Name: api.ResourceCPU, Target: api.MetricTarget{Type: api.MetricUtilization, AverageUtilization: t}}})
	}
	var behavior api.HorizontalPodAutoscalerBehavior
	if _, ok := out.Annotations[BehaviorAnnotation]; ok {
		if err := takeJSON(out.Annotations, BehaviorAnnotation, &behavior); err != nil {
			return nil, err
		}
		out.Spec.Behavior = &behavior
	}

	st := in.Status
	out.Status = api.HorizontalPodAutoscalerStatus{ObservedGeneration: st.ObservedGeneration, LastScaleTime: goTime(st.LastScaleTime),
		CurrentReplicas: st.CurrentReplicas, DesiredReplicas: st.DesiredReplicas}
	var current []autoscalingv1.MetricStatus
	if err := takeJSON(out.Annotations, MetricStatusesAnnotation, &current); err != nil {
		return nil, err
	}
	if c := st.CurrentCPUUtilizationPercentage; c != nil {
		out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, api.MetricStatus{Type: api.MetricSourceResource,
			Resource: &api.ResourceMetricStatus{Name: api.ResourceCPU, Current: api.MetricValueStatus{AverageUtilization: c}}})
	}
	for _, m := range current {
		out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, metricStatusFromV1(m))
	}
	var conds []autoscalingv1.HorizontalPodAutoscalerCondition
	if err := takeJSON(out.Annotations, ConditionsAnnotation, &conds); err != nil {
		return nil, err
	}
	for _, c := range conds {
		out.Status.Conditions = append(out.Status.Conditions, api.HorizontalPodAutoscalerCondition{Type: string(c.Type), Status: string(c.Status),
			LastTransitionTime: goTime(&c.LastTransitionTime), Reason: c.Reason, Message: c.Message})
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out, nil
}

// Only Resource metrics are stored (validation refuses the others), so
// they are the only ones the annotations carry.
func metricToV1(m api.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: corev1.ResourceName(r.Name), TargetAverageUtilization: r.Target.AverageUtilization,
			TargetAverageValue: quantity(r.Target.AverageValue)}
	}
	return out
}

func metricFromV1(m autoscalingv1.MetricSpec) api.MetricSpec {
	out := api.MetricSpec{Type: string(m.Type)}
	if r := m.Resource; r != nil {
		target := api.MetricTarget{Type: api.MetricUtilization, AverageUtilization: r.TargetAverageUtilization}
		if r.TargetAverageValue != nil {
			target = api.MetricTarget{Type: api.MetricAverageValue, AverageValue: r.TargetAverageValue.String()}
		}
		out.Resource = &api.ResourceMetricSource{Name: string(r.Name), Target: target}
	}
	return out
}

func metricStatusToV1(m api.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: corev1.ResourceName(r.Name), CurrentAverageUtilization: r.Current.AverageUtilization}
		if q := quantity(r.Current.AverageValue); q != nil {
			out.Resource.CurrentAverageValue = *q
		}
	}
	return out
}

func metricStatusFromV1(m autoscalingv1.MetricStatus) api.MetricStatus {
	out := api.MetricStatus{Type: string(m.Type)}
	if r := m.Resource; r != nil {
		out.Resource = &api.ResourceMetricStatus{Name: string(r.Name), Current: api.MetricValueStatus{AverageUtilization: r.CurrentAverageUtilization}}
		if !r.CurrentAverageValue.IsZero() || r.CurrentAverageUtilization == nil {
			out.Resource.Current.AverageValue = r.CurrentAverageValue.String()
		}
	}
	return out
}

// quantity is s parsed; stored quantities were validated on their way in.
func quantity(s string) *resource.Quantity {
	if s == "" {
		return nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil
	}
	return &q
}

func setJSON[T any](annotations map[string]string, key string, v T) {
	data, err := json.Marshal(v)
	if err != nil || string(data) == "null" {
		return
	}
	annotations[key] = string(data)
}

// takeJSON decodes and removes the annotation key, when present.
func takeJSON(annotations map[string]string, key string, out any) error {
	v, ok := annotations[key]
	if !ok {
		return nil
	}
	delete(annotations, key)
	if err := json.Unmarshal([]byte(v), out); err != nil {
		return errdefs.BadRequest("metadata.annotations["+key+"]", "does not decode: %v", err)
	}
	return nil
}

func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	return &metav1.Time{Time: *t}
}

func derefTime(t *time.Time) metav1.Time {
	if t == nil {
		return metav1.Time{}
	}
	return metav1.Time{Time: *t}
}

func goTime(t *metav1.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	tt := t.Time
	return &tt
}
