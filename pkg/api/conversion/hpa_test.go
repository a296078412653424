package conversion

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"minik8s/pkg/api"

	"k8s.io/apimachinery/pkg/api/resource"
)

func cpu(pct int32) api.MetricSpec {
	return api.MetricSpec{Type: api.MetricSourceResource, Resource: &api.ResourceMetricSource{Name: api.ResourceCPU,
		Target: api.MetricTarget{Type: api.MetricUtilization, AverageUtilization: &pct}}}
}

func memory(avg string) api.MetricSpec {
	return api.MetricSpec{Type: api.MetricSourceResource, Resource: &api.ResourceMetricSource{Name: api.ResourceMemory,
		Target: api.MetricTarget{Type: api.MetricAverageValue, AverageValue: avg}}}
}

// TestHPARoundTrip: what v1 has no field for survives v2 → v1 → v2, the
// stored object is not changed by being shown, and the CPU utilization
// target is v1's own field.
func TestHPARoundTrip(t *testing.T) {
	one, sixty, window := int32(1), int32(60), int32(30)
	now := time.Unix(1700000000, 0).UTC()
	thousand, tolerance := resource.MustParse("1k"), resource.MustParse("50m")
	for _, tc := range []struct {
		name string
		in   api.HorizontalPodAutoscaler
	}{
		{"cpu only", api.HorizontalPodAutoscaler{Spec: api.HorizontalPodAutoscalerSpec{MinReplicas: &one, MaxReplicas: 3, Metrics: []api.MetricSpec{cpu(50)}}}},
		{"memory, behavior and status", api.HorizontalPodAutoscaler{
			ObjectMeta: api.ObjectMeta{Name: "h", Annotations: map[string]string{"team": "a"}},
			Spec: api.HorizontalPodAutoscalerSpec{MinReplicas: &one, MaxReplicas: 5, Metrics: []api.MetricSpec{memory("100Mi"), cpu(50)},
				Behavior: &api.HorizontalPodAutoscalerBehavior{ScaleDown: &api.HPAScalingRules{StabilizationWindowSeconds: &window,
					Policies: []api.HPAScalingPolicy{{Type: api.HPAPolicyPods, Value: 1, PeriodSeconds: 60}}}}},
			Status: api.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 3, LastScaleTime: &now,
				CurrentMetrics: []api.MetricStatus{{Type: api.MetricSourceResource, Resource: &api.ResourceMetricStatus{Name: api.ResourceCPU,
					Current: api.MetricValueStatus{AverageUtilization: &sixty}}}},
				Conditions: []api.HorizontalPodAutoscalerCondition{{Type: api.HPAAbleToScale, Status: "True", LastTransitionTime: &now, Reason: "ReadyForNewScale"}}},
		}},
		{"every metric source, and a tolerance", api.HorizontalPodAutoscaler{Spec: api.HorizontalPodAutoscalerSpec{MinReplicas: &one, MaxReplicas: 4,
			Metrics: []api.MetricSpec{
				{Type: api.MetricSourcePods, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "rps"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &thousand}}},
				{Type: api.MetricSourceObject, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "web", APIVersion: "v1"},
					Metric: autoscalingv2.MetricIdentifier{Name: "hits"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &thousand}}},
				{Type: api.MetricSourceExternal, External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &thousand}}},
				{Type: api.MetricSourceContainerResource, ContainerResource: &api.ContainerResourceMetricSource{Name: api.ResourceCPU, Container: "app",
					Target: api.MetricTarget{Type: api.MetricUtilization, AverageUtilization: &sixty}}},
				cpu(50),
			},
			Behavior: &api.HorizontalPodAutoscalerBehavior{ScaleUp: &api.HPAScalingRules{Tolerance: &tolerance}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := tc.in
			before := maps.Clone(stored.Annotations)
			v1, err := HPAToV1(&stored)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(stored.Annotations, before) {
				t.Errorf("showing in v1 changed the stored annotations: %v", stored.Annotations)
			}
			if got := v1.Spec.TargetCPUUtilizationPercentage; got == nil || *got != 50 {
				t.Errorf("targetCPUUtilizationPercentage = %v, want 50", got)
			}
			back, err := HPAFromV1(v1)
			if err != nil {
				t.Fatal(err)
			}
			// As JSON: times decoded from an annotation are equal instants
			// in another *time.Location. The current metrics are left
			// out: Kubernetes' conversion adds a zero averageValue to the
			// CPU's (its v1 annotation's field is not optional).
			back.Status.CurrentMetrics, tc.in.Status.CurrentMetrics = nil, nil
			got, _ := json.Marshal(back)
			want, _ := json.Marshal(&tc.in)
			if string(got) != string(want) {
				t.Errorf("round trip:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestHPAFromV1Refuses: an annotation that does not decode is named, and
// a body of another version is refused.
func TestHPAFromV1Refuses(t *testing.T) {
	for _, tc := range []struct {
		in   api.HorizontalPodAutoscalerV1
		want string
	}{
		{api.HorizontalPodAutoscalerV1{ObjectMeta: api.ObjectMeta{Annotations: map[string]string{MetricSpecsAnnotation: "[{"}}}, MetricSpecsAnnotation},
		{api.HorizontalPodAutoscalerV1{ObjectMeta: api.ObjectMeta{Annotations: map[string]string{BehaviorAnnotation: "{"}}}, BehaviorAnnotation},
		{api.HorizontalPodAutoscalerV1{TypeMeta: api.TypeMeta{APIVersion: "autoscaling/v2"}}, "apiVersion"},
		{api.HorizontalPodAutoscalerV1{TypeMeta: api.TypeMeta{Kind: "Deployment"}}, "kind"},
	} {
		if _, err := HPAFromV1(&tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("HPAFromV1(%+v) = %v, want an error naming %s", tc.in, err, tc.want)
		}
	}
}
