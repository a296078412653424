package validation

import (
	"slices"

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
// Kubernetes' rules judge): Deployments, ReplicaSets and StatefulSets (the
// built-in kinds with a scale subresource), scaled on their
// pods' (or one container's) CPU or memory. Pods, Object and External
// metrics are kept: the controller says it cannot read them.
func hpa(h *api.HorizontalPodAutoscaler) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	ref := h.Spec.ScaleTargetRef
	kinds := []string{api.DeploymentsResource.Kind, api.ReplicaSetsResource.Kind, api.StatefulSetsResource.Kind}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(spec.Child("scaleTargetRef", "kind"), ref.Kind, kinds))
	}
	if ref.APIVersion != "" && ref.APIVersion != "apps/v1" {
		errs = append(errs, field.NotSupported(spec.Child("scaleTargetRef", "apiVersion"), ref.APIVersion, []string{"apps/v1"}))
	}
	for i, m := range h.Spec.Metrics {
		p := spec.Child("metrics").Index(i)
		switch {
		case m.Type == api.MetricSourceResource && m.Resource != nil:
			errs = append(errs, resourceMetric(p.Child("resource"), m.Resource.Name, m.Resource.Target)...)
		case m.Type == api.MetricSourceContainerResource && m.ContainerResource != nil:
			errs = append(errs, resourceMetric(p.Child("containerResource"), m.ContainerResource.Name, m.ContainerResource.Target)...)
		}
	}
	return errs
}

// resourceMetric: the resources the metrics API measures, and a per-pod
// value that is a quantity of them.
func resourceMetric(p *field.Path, name string, t api.MetricTarget) field.ErrorList {
	var errs field.ErrorList
	if name != api.ResourceCPU && name != api.ResourceMemory {
		errs = append(errs, field.NotSupported(p.Child("name"), name, []string{api.ResourceCPU, api.ResourceMemory}))
	}
	if t.Type == api.MetricAverageValue && t.AverageValue != "" {
		errs = append(errs, resourceList(p.Child("target"), api.ResourceList{"averageValue": t.AverageValue})...)
	}
	return errs
}
