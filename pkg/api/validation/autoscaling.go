package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
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

// hpa: what the autoscaler serves, of what Kubernetes' HPA may say (which
// Kubernetes' rules judge): Deployments and ReplicaSets, scaled on their
// pods' CPU or memory.
func hpa(h *api.HorizontalPodAutoscaler) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	ref := h.Spec.ScaleTargetRef
	if ref.Kind != api.DeploymentsResource.Kind && ref.Kind != api.ReplicaSetsResource.Kind {
		errs = append(errs, field.NotSupported(spec.Child("scaleTargetRef", "kind"), ref.Kind, []string{api.DeploymentsResource.Kind, api.ReplicaSetsResource.Kind}))
	}
	if ref.APIVersion != "" && ref.APIVersion != "apps/v1" {
		errs = append(errs, field.NotSupported(spec.Child("scaleTargetRef", "apiVersion"), ref.APIVersion, []string{"apps/v1"}))
	}
	for i, m := range h.Spec.Metrics {
		p := spec.Child("metrics").Index(i)
		if m.Type != api.MetricSourceResource {
			errs = append(errs, field.NotSupported(p.Child("type"), m.Type, []string{api.MetricSourceResource}))
			continue
		}
		if m.Resource == nil {
			continue // Kubernetes' to refuse
		}
		if n := m.Resource.Name; n != api.ResourceCPU && n != api.ResourceMemory {
			errs = append(errs, field.NotSupported(p.Child("resource", "name"), n, []string{api.ResourceCPU, api.ResourceMemory}))
		}
		if t := m.Resource.Target; t.Type == api.MetricAverageValue && t.AverageValue != "" {
			errs = append(errs, resourceList(p.Child("resource", "target"), api.ResourceList{"averageValue": t.AverageValue})...)
		}
	}
	return errs
}
