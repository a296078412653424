package api

import corev1 "k8s.io/api/core/v1"

// SchedulingGroup serves PriorityClasses.
const SchedulingGroup = "scheduling.k8s.io"

// PriorityClass (scheduling.k8s.io/v1, cluster-wide) maps a name pods
// give in spec.priorityClassName to the priority the apiserver's Priority
// admission writes in their spec.priority; the scheduler preempts pods of
// lower priority for them.
type PriorityClass struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	// Value is the priority; users' classes go up to
	// HighestUserDefinablePriority, the system's above it.
	Value int32 `json:"value"`
	// GlobalDefault: pods that name no class get this one.
	GlobalDefault bool   `json:"globalDefault,omitempty"`
	Description   string `json:"description,omitempty"`
	// PreemptionPolicy is the pods' (PreemptLowerPriority when unset).
	PreemptionPolicy *corev1.PreemptionPolicy `json:"preemptionPolicy,omitempty"`
}

type PriorityClassList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []PriorityClass `json:"items"`
}

// Kubernetes' priorities and its two system classes, which the apiserver
// makes at start and only kube-system's pods may use.
const (
	HighestUserDefinablePriority = int32(1000000000)
	SystemCriticalPriority       = 2 * HighestUserDefinablePriority
	SystemPriorityClassPrefix    = "system-"
	SystemClusterCritical        = SystemPriorityClassPrefix + "cluster-critical"
	SystemNodeCritical           = SystemPriorityClassPrefix + "node-critical"
)

// SystemPriorityClasses are Kubernetes' built-in classes, as its
// scheduling/v1 SystemPriorityClasses.
func SystemPriorityClasses() []*PriorityClass {
	return []*PriorityClass{
		{ObjectMeta: ObjectMeta{Name: SystemNodeCritical}, Value: SystemCriticalPriority + 1000,
			Description: "Used for system critical pods that must not be moved from their current node."},
		{ObjectMeta: ObjectMeta{Name: SystemClusterCritical}, Value: SystemCriticalPriority,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
	}
}
