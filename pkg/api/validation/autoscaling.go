package validation

import (
	"fmt"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/quantity"
)

// defaultHPA fills what Kubernetes fills: one replica at least, and with
// no metrics, CPU at 80 % of requests.
func defaultHPA(h *api.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		one := int32(1)
		h.Spec.MinReplicas = &one
	}
	if len(h.Spec.Metrics) == 0 {
		eighty := int32(80)
		h.Spec.Metrics = []api.MetricSpec{{Type: api.MetricSourceResource, Resource: &api.ResourceMetricSource{Name: api.ResourceCPU,
			Target: api.MetricTarget{Type: api.MetricUtilization, AverageUtilization: &eighty}}}}
	}
}

func hpa(h *api.HorizontalPodAutoscaler) error {
	ref := h.Spec.ScaleTargetRef
	switch {
	case ref.Kind != api.DeploymentsResource.Kind && ref.Kind != api.ReplicaSetsResource.Kind:
		return errdefs.Invalid("spec.scaleTargetRef.kind", "%q is not Deployment or ReplicaSet", ref.Kind)
	case ref.APIVersion != "" && ref.APIVersion != "apps/v1":
		return errdefs.Invalid("spec.scaleTargetRef.apiVersion", "%q is not apps/v1", ref.APIVersion)
	case ref.Name == "":
		return errdefs.Invalid("spec.scaleTargetRef.name", "the name of the object to scale is required")
	}
	if min := h.Spec.MinReplicas; min != nil && *min < 1 {
		return errdefs.Invalid("spec.minReplicas", "%d must be at least 1", *min)
	}
	if h.Spec.MaxReplicas < 1 || (h.Spec.MinReplicas != nil && h.Spec.MaxReplicas < *h.Spec.MinReplicas) {
		return errdefs.Invalid("spec.maxReplicas", "%d must be at least 1 and minReplicas", h.Spec.MaxReplicas)
	}
	for i, m := range h.Spec.Metrics {
		field := fmt.Sprintf("spec.metrics[%d]", i)
		if m.Type != api.MetricSourceResource || m.Resource == nil {
			return errdefs.Invalid(field+".type", "%q: only Resource metrics (cpu, memory) are served", m.Type)
		}
		if n := m.Resource.Name; n != api.ResourceCPU && n != api.ResourceMemory {
			return errdefs.Invalid(field+".resource.name", "%q is not cpu or memory", n)
		}
		switch t := m.Resource.Target; t.Type {
		case api.MetricUtilization:
			if t.AverageUtilization == nil || *t.AverageUtilization < 1 {
				return errdefs.Invalid(field+".resource.target.averageUtilization", "a percentage of requests above 0 is required")
			}
		case api.MetricAverageValue:
			if _, err := quantity.Parse(t.AverageValue); err != nil || t.AverageValue == "" {
				return errdefs.Invalid(field+".resource.target.averageValue", "%q is not a quantity", t.AverageValue)
			}
		default:
			return errdefs.Invalid(field+".resource.target.type", "%q is not Utilization or AverageValue", t.Type)
		}
	}
	if b := h.Spec.Behavior; b != nil {
		for dir, r := range map[string]*api.HPAScalingRules{"scaleUp": b.ScaleUp, "scaleDown": b.ScaleDown} {
			if err := scalingRules("spec.behavior."+dir, r); err != nil {
				return err
			}
		}
	}
	return nil
}

func scalingRules(field string, r *api.HPAScalingRules) error {
	if r == nil {
		return nil
	}
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > 3600) {
		return errdefs.Invalid(field+".stabilizationWindowSeconds", "%d is not in 0..3600", *w)
	}
	switch r.SelectPolicy {
	case "", api.HPASelectMax, api.HPASelectMin, api.HPASelectDisabled:
	default:
		return errdefs.Invalid(field+".selectPolicy", "%q is not Max, Min or Disabled", r.SelectPolicy)
	}
	for i, p := range r.Policies {
		f := fmt.Sprintf("%s.policies[%d]", field, i)
		if p.Type != api.HPAPolicyPods && p.Type != api.HPAPolicyPercent {
			return errdefs.Invalid(f+".type", "%q is not Pods or Percent", p.Type)
		}
		if p.Value < 1 {
			return errdefs.Invalid(f+".value", "%d must be positive", p.Value)
		}
		if p.PeriodSeconds < 1 || p.PeriodSeconds > 1800 {
			return errdefs.Invalid(f+".periodSeconds", "%d is not in 1..1800", p.PeriodSeconds)
		}
	}
	return nil
}
