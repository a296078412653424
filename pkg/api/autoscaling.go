package api

import (
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// HorizontalPodAutoscaler (autoscaling/v2, hpa) sets the replicas of a
// Deployment or ReplicaSet, through its scale subresource, from the CPU
// and memory its pods use against what they request.
type HorizontalPodAutoscaler struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       HorizontalPodAutoscalerSpec   `json:"spec,omitempty"`
	Status     HorizontalPodAutoscalerStatus `json:"status,omitempty"`
}

type HorizontalPodAutoscalerSpec struct {
	ScaleTargetRef CrossVersionObjectReference `json:"scaleTargetRef"`
	// MinReplicas defaults to 1.
	MinReplicas *int32                           `json:"minReplicas,omitempty"`
	MaxReplicas int32                            `json:"maxReplicas"`
	Metrics     []MetricSpec                     `json:"metrics,omitempty"`
	Behavior    *HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

type CrossVersionObjectReference struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// The metric source types. minik8s reads Resource and ContainerResource
// (cpu, memory) from its metrics API; it serves no custom or external
// metrics API, so an HPA with a Pods, Object or External metric is kept
// and says, in its ScalingActive condition, that it cannot read them (as
// on a Kubernetes cluster without such an adapter).
const (
	MetricSourceResource          = "Resource"
	MetricSourceContainerResource = "ContainerResource"
	MetricSourcePods              = "Pods"
	MetricSourceObject            = "Object"
	MetricSourceExternal          = "External"
)

type MetricSpec struct {
	Type              string                              `json:"type"`
	Object            *autoscalingv2.ObjectMetricSource   `json:"object,omitempty"`
	Pods              *autoscalingv2.PodsMetricSource     `json:"pods,omitempty"`
	Resource          *ResourceMetricSource               `json:"resource,omitempty"`
	ContainerResource *ContainerResourceMetricSource      `json:"containerResource,omitempty"`
	External          *autoscalingv2.ExternalMetricSource `json:"external,omitempty"`
}

// ContainerResourceMetricSource is a Resource metric of one container
// of each pod.
type ContainerResourceMetricSource struct {
	Name      string       `json:"name"`
	Target    MetricTarget `json:"target"`
	Container string       `json:"container"`
}

type ResourceMetricSource struct {
	Name   string       `json:"name"`
	Target MetricTarget `json:"target"`
}

// The target types: Utilization (percent of requests, averaged over the
// pods), AverageValue (a quantity per pod), Value (of an object or an
// external metric).
const (
	MetricUtilization  = "Utilization"
	MetricAverageValue = "AverageValue"
	MetricValue        = "Value"
)

type MetricTarget struct {
	Type               string `json:"type"`
	Value              string `json:"value,omitempty"`
	AverageValue       string `json:"averageValue,omitempty"`
	AverageUtilization *int32 `json:"averageUtilization,omitempty"`
}

type HorizontalPodAutoscalerBehavior struct {
	ScaleUp   *HPAScalingRules `json:"scaleUp,omitempty"`
	ScaleDown *HPAScalingRules `json:"scaleDown,omitempty"`
}

// HPAScalingRules bound how fast replicas change: recommendations are
// held for StabilizationWindowSeconds (the most of them when scaling
// down, the fewest up), and the policies cap a change per period.
// Tolerance is the ratio of usage to target, on either side of 1,
// within which nothing changes (0.1 when unset).
type HPAScalingRules struct {
	StabilizationWindowSeconds *int32             `json:"stabilizationWindowSeconds,omitempty"`
	SelectPolicy               string             `json:"selectPolicy,omitempty"`
	Policies                   []HPAScalingPolicy `json:"policies,omitempty"`
	Tolerance                  *resource.Quantity `json:"tolerance,omitempty"`
}

// The policy types: Pods (a number) or Percent (of the current replicas)
// per PeriodSeconds.
const (
	HPAPolicyPods    = "Pods"
	HPAPolicyPercent = "Percent"

	HPASelectMax      = "Max"
	HPASelectMin      = "Min"
	HPASelectDisabled = "Disabled"
)

type HPAScalingPolicy struct {
	Type          string `json:"type"`
	Value         int32  `json:"value"`
	PeriodSeconds int32  `json:"periodSeconds"`
}

type HorizontalPodAutoscalerStatus struct {
	ObservedGeneration *int64                             `json:"observedGeneration,omitempty"`
	LastScaleTime      *time.Time                         `json:"lastScaleTime,omitempty"`
	CurrentReplicas    int32                              `json:"currentReplicas"`
	DesiredReplicas    int32                              `json:"desiredReplicas"`
	CurrentMetrics     []MetricStatus                     `json:"currentMetrics,omitempty"`
	Conditions         []HorizontalPodAutoscalerCondition `json:"conditions,omitempty"`
}

type MetricStatus struct {
	Type              string                              `json:"type"`
	Object            *autoscalingv2.ObjectMetricStatus   `json:"object,omitempty"`
	Pods              *autoscalingv2.PodsMetricStatus     `json:"pods,omitempty"`
	Resource          *ResourceMetricStatus               `json:"resource,omitempty"`
	ContainerResource *ContainerResourceMetricStatus      `json:"containerResource,omitempty"`
	External          *autoscalingv2.ExternalMetricStatus `json:"external,omitempty"`
}

type ContainerResourceMetricStatus struct {
	Name      string            `json:"name"`
	Current   MetricValueStatus `json:"current"`
	Container string            `json:"container"`
}

type ResourceMetricStatus struct {
	Name    string            `json:"name"`
	Current MetricValueStatus `json:"current"`
}

type MetricValueStatus struct {
	Value              string `json:"value,omitempty"`
	AverageValue       string `json:"averageValue,omitempty"`
	AverageUtilization *int32 `json:"averageUtilization,omitempty"`
}

// The conditions of an HPA.
const (
	HPAAbleToScale    = "AbleToScale"
	HPAScalingActive  = "ScalingActive"
	HPAScalingLimited = "ScalingLimited"
)

type HorizontalPodAutoscalerCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
}

type HorizontalPodAutoscalerList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []HorizontalPodAutoscaler `json:"items"`
}

// HorizontalPodAutoscalerV1 is an HPA as autoscaling/v1 shows it, the
// version `kubectl autoscale` writes and older manifests use: the same
// objects, stored as autoscaling/v2 and converted on the way in and out
// (pkg/api/conversion), as Kubernetes serves both.
type HorizontalPodAutoscalerV1 struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       autoscalingv1.HorizontalPodAutoscalerSpec   `json:"spec,omitempty"`
	Status     autoscalingv1.HorizontalPodAutoscalerStatus `json:"status,omitempty"`
}
