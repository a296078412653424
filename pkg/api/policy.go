package api

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PolicyGroup serves PodDisruptionBudgets and the Eviction a pod's
// eviction subresource takes.
const PolicyGroup = "policy"

// PodDisruptionBudget (policy/v1) bounds how many of the pods it selects
// voluntary disruptions (evictions, as kubectl drain makes) may take down
// at once.
type PodDisruptionBudget struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodDisruptionBudgetSpec   `json:"spec,omitempty"`
	Status     PodDisruptionBudgetStatus `json:"status,omitempty"`
}

// The unhealthyPodEvictionPolicy values.
const (
	// IfHealthyBudget: a pod that is not ready may be evicted while the
	// budget's healthy pods reach its desired count.
	UnhealthyPodEvictionIfHealthyBudget = "IfHealthyBudget"
	// AlwaysAllow: a pod that is not ready may always be evicted.
	UnhealthyPodEvictionAlwaysAllow = "AlwaysAllow"
)

type PodDisruptionBudgetSpec struct {
	// MinAvailable and MaxUnavailable (one of them) are a count or a
	// percentage of the expected pods.
	MinAvailable               *IntOrString   `json:"minAvailable,omitempty"`
	Selector                   *LabelSelector `json:"selector,omitempty"`
	MaxUnavailable             *IntOrString   `json:"maxUnavailable,omitempty"`
	UnhealthyPodEvictionPolicy *string        `json:"unhealthyPodEvictionPolicy,omitempty"`
}

// PodDisruptionBudgetStatus is the disruption controller's, but for
// DisruptionsAllowed and DisruptedPods, which each eviction also writes.
type PodDisruptionBudgetStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DisruptedPods are pods evicted whose deletion the controller has not
	// yet seen, by when they were evicted.
	DisruptedPods      map[string]time.Time `json:"disruptedPods,omitempty"`
	DisruptionsAllowed int32                `json:"disruptionsAllowed"`
	CurrentHealthy     int32                `json:"currentHealthy"`
	DesiredHealthy     int32                `json:"desiredHealthy"`
	ExpectedPods       int32                `json:"expectedPods"`
	Conditions         []Condition          `json:"conditions,omitempty"`
}

// Condition is metav1.Condition.
type Condition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	ObservedGeneration int64      `json:"observedGeneration,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime"`
	Reason             string     `json:"reason"`
	Message            string     `json:"message"`
}

// The PodDisruptionBudget's condition and its reasons.
const (
	DisruptionAllowedCondition = "DisruptionAllowed"
	PDBSyncFailedReason        = "SyncFailed"
	PDBSufficientPodsReason    = "SufficientPods"
	PDBInsufficientPodsReason  = "InsufficientPods"
)

type PodDisruptionBudgetList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []PodDisruptionBudget `json:"items"`
}

// Eviction (policy/v1) asks, through a pod's eviction subresource, that
// the pod be deleted if its disruption budget allows.
type Eviction struct {
	TypeMeta      `json:",inline"`
	ObjectMeta    `json:"metadata,omitempty"`
	DeleteOptions *metav1.DeleteOptions `json:"deleteOptions,omitempty"`
}
