package api

import "time"

// Summary is a kubelet's resource readings (GET /stats/summary), in the
// shape of Kubernetes' stats/v1alpha1 Summary.
type Summary struct {
	Node NodeStats  `json:"node"`
	Pods []PodStats `json:"pods"`
}

type NodeStats struct {
	NodeName  string       `json:"nodeName"`
	StartTime *time.Time   `json:"startTime,omitempty"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
}

type PodReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

type PodStats struct {
	PodRef     PodReference     `json:"podRef"`
	Containers []ContainerStats `json:"containers"`
	CPU        *CPUStats        `json:"cpu,omitempty"`
	Memory     *MemoryStats     `json:"memory,omitempty"`
}

type ContainerStats struct {
	Name   string       `json:"name"`
	CPU    *CPUStats    `json:"cpu,omitempty"`
	Memory *MemoryStats `json:"memory,omitempty"`
}

type CPUStats struct {
	Time time.Time `json:"time"`
	// UsageNanoCores is the rate of use over the last sampling window.
	UsageNanoCores       *uint64 `json:"usageNanoCores,omitempty"`
	UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds,omitempty"`
}

type MemoryStats struct {
	Time            time.Time `json:"time"`
	UsageBytes      *uint64   `json:"usageBytes,omitempty"`
	WorkingSetBytes *uint64   `json:"workingSetBytes,omitempty"`
}

// MetricsGroupVersion is the resource metrics API (kubectl top).
const MetricsGroupVersion = "metrics.k8s.io/v1beta1"

// NodeMetrics and PodMetrics are the resource metrics API's kinds: the
// usage over the window ending at Timestamp.
type NodeMetrics struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Timestamp  time.Time    `json:"timestamp"`
	Window     string       `json:"window"`
	Usage      ResourceList `json:"usage"`
}

type NodeMetricsList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []NodeMetrics `json:"items"`
}

type PodMetrics struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Timestamp  time.Time          `json:"timestamp"`
	Window     string             `json:"window"`
	Containers []ContainerMetrics `json:"containers"`
}

type ContainerMetrics struct {
	Name  string       `json:"name"`
	Usage ResourceList `json:"usage"`
}

type PodMetricsList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []PodMetrics `json:"items"`
}
