package api

import (
	"encoding/json"
	"time"
)

// DaemonSet (apps/v1) runs one copy of a pod on every node its template
// fits (node selector, node affinity, tolerations), nodes joining later
// included.
type DaemonSet struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       DaemonSetSpec   `json:"spec,omitempty"`
	Status     DaemonSetStatus `json:"status,omitempty"`
}

type DaemonSetSpec struct {
	Selector       *LabelSelector          `json:"selector"`
	Template       PodTemplateSpec         `json:"template"`
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// MinReadySeconds a new pod must be ready to count as available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// RevisionHistoryLimit old ControllerRevisions are kept for rollbacks
	// (default 10).
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// The update strategies of a DaemonSet.
const (
	DaemonSetRollingUpdate = "RollingUpdate"
	DaemonSetOnDelete      = "OnDelete"
)

type DaemonSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete (a pod is replaced
	// only once someone deletes it).
	Type          string                  `json:"type,omitempty"`
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet bounds a rolling update: at most MaxUnavailable
// nodes without an available pod (default 1), or with MaxSurge a new pod
// started beside the old one, which goes once the new one is available
// (default 0). Each is a number or a percentage of the desired nodes.
type RollingUpdateDaemonSet struct {
	MaxUnavailable *IntOrString `json:"maxUnavailable,omitempty"`
	MaxSurge       *IntOrString `json:"maxSurge,omitempty"`
}

type DaemonSetStatus struct {
	// CurrentNumberScheduled nodes run a pod of the set and should.
	CurrentNumberScheduled int32 `json:"currentNumberScheduled"`
	// NumberMisscheduled nodes run a pod of the set and should not.
	NumberMisscheduled int32 `json:"numberMisscheduled"`
	// DesiredNumberScheduled nodes should run a pod of the set.
	DesiredNumberScheduled int32                `json:"desiredNumberScheduled"`
	NumberReady            int32                `json:"numberReady"`
	ObservedGeneration     int64                `json:"observedGeneration,omitempty"`
	UpdatedNumberScheduled int32                `json:"updatedNumberScheduled,omitempty"`
	NumberAvailable        int32                `json:"numberAvailable,omitempty"`
	NumberUnavailable      int32                `json:"numberUnavailable,omitempty"`
	CollisionCount         *int32               `json:"collisionCount,omitempty"`
	Conditions             []DaemonSetCondition `json:"conditions,omitempty"`
}

type DaemonSetCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
}

type DaemonSetList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []DaemonSet `json:"items"`
}

// ControllerRevision (apps/v1) is an immutable snapshot of a DaemonSet's
// (or StatefulSet's) template: kubectl rollout history lists them, and
// rollout undo patches the set with one's data.
type ControllerRevision struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	// Data is the state of the set it records, as a strategic merge
	// patch of it ({"spec":{"template":{...,"$patch":"replace"}}}).
	Data     json.RawMessage `json:"data,omitempty"`
	Revision int64           `json:"revision"`
}

type ControllerRevisionList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []ControllerRevision `json:"items"`
}

// The label of a DaemonSet's pods and revisions naming the revision
// (its template's hash), as Kubernetes spells it.
const LabelControllerRevisionHash = "controller-revision-hash"

// AnnotationDaemonSetTemplateGeneration counts a DaemonSet's template
// changes, as Kubernetes' apps/v1 keeps its internal templateGeneration.
const AnnotationDaemonSetTemplateGeneration = "deprecated.daemonset.template.generation"
