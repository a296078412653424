package api

import "time"

// StatefulSet (apps/v1) runs pods of stable identity: NAME-0 .. NAME-N-1,
// each with its own host name under the set's headless Service and its
// own claims (one per volumeClaimTemplate), which outlive the pod so that
// its replacement finds its data.
type StatefulSet struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       StatefulSetSpec   `json:"spec,omitempty"`
	Status     StatefulSetStatus `json:"status,omitempty"`
}

type StatefulSetSpec struct {
	// Replicas is the number of pods (default 1).
	Replicas *int32          `json:"replicas,omitempty"`
	Selector *LabelSelector  `json:"selector"`
	Template PodTemplateSpec `json:"template"`
	// VolumeClaimTemplates are the claims each pod gets, named
	// TEMPLATE-SET-ORDINAL, mounted by the pod's volume of the template's
	// name; their namespace is always the set's.
	VolumeClaimTemplates []PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// ServiceName is the headless Service whose subdomain names the pods
	// (POD.SERVICE.NS.svc.DOMAIN).
	ServiceName string `json:"serviceName,omitempty"`
	// PodManagementPolicy is OrderedReady (the default: one pod at a time,
	// each after the previous one is Running and Ready, removed in
	// reverse) or Parallel (all at once).
	PodManagementPolicy  string                    `json:"podManagementPolicy,omitempty"`
	UpdateStrategy       StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`
	RevisionHistoryLimit *int32                    `json:"revisionHistoryLimit,omitempty"`
	MinReadySeconds      int32                     `json:"minReadySeconds,omitempty"`
	// PersistentVolumeClaimRetentionPolicy says whether claims go with
	// the set (whenDeleted) or with the pods a scale down removes
	// (whenScaled): Retain (the default) or Delete.
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	// Ordinals moves the first ordinal from 0.
	Ordinals *StatefulSetOrdinals `json:"ordinals,omitempty"`
}

// The pod management policies of a StatefulSet.
const (
	OrderedReadyPodManagement = "OrderedReady"
	ParallelPodManagement     = "Parallel"
)

// The update strategies of a StatefulSet.
const (
	StatefulSetRollingUpdate = "RollingUpdate"
	StatefulSetOnDelete      = "OnDelete"
)

type StatefulSetUpdateStrategy struct {
	// Type is RollingUpdate (the default: pods replaced from the highest
	// ordinal down) or OnDelete (a pod is replaced once someone deletes
	// it).
	Type          string                            `json:"type,omitempty"`
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy: pods of an ordinal below Partition
// keep their revision; MaxUnavailable pods may be down at once (1).
type RollingUpdateStatefulSetStrategy struct {
	Partition      *int32       `json:"partition,omitempty"`
	MaxUnavailable *IntOrString `json:"maxUnavailable,omitempty"`
}

// The claim retention policies.
const (
	RetainPersistentVolumeClaimRetentionPolicy = "Retain"
	DeletePersistentVolumeClaimRetentionPolicy = "Delete"
)

type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	WhenDeleted string `json:"whenDeleted,omitempty"`
	WhenScaled  string `json:"whenScaled,omitempty"`
}

type StatefulSetOrdinals struct {
	Start int32 `json:"start"`
}

type StatefulSetStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas pods exist; ReadyReplicas of them are ready.
	Replicas        int32 `json:"replicas"`
	ReadyReplicas   int32 `json:"readyReplicas,omitempty"`
	CurrentReplicas int32 `json:"currentReplicas,omitempty"`
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// CurrentRevision is the revision of pods below the rollout, and
	// UpdateRevision the template's (ControllerRevision names).
	CurrentRevision   string                 `json:"currentRevision,omitempty"`
	UpdateRevision    string                 `json:"updateRevision,omitempty"`
	CollisionCount    *int32                 `json:"collisionCount,omitempty"`
	Conditions        []StatefulSetCondition `json:"conditions,omitempty"`
	AvailableReplicas int32                  `json:"availableReplicas"`
}

type StatefulSetCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
}

type StatefulSetList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []StatefulSet `json:"items"`
}

// The labels a StatefulSet's pods carry, as Kubernetes spells them.
const (
	LabelStatefulSetPodName = "statefulset.kubernetes.io/pod-name"
	LabelPodIndex           = "apps.kubernetes.io/pod-index"
)
