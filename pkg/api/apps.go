package api

import "time"

// Deployment (apps/v1) rolls a pod template out through ReplicaSets, one
// per version of the template (its pod-template-hash).
type Deployment struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       DeploymentSpec   `json:"spec,omitempty"`
	Status     DeploymentStatus `json:"status,omitempty"`
}

type DeploymentSpec struct {
	Replicas *int32             `json:"replicas,omitempty"`
	Selector *LabelSelector     `json:"selector"`
	Template PodTemplateSpec    `json:"template"`
	Strategy DeploymentStrategy `json:"strategy,omitempty"`
	// MinReadySeconds a new pod must be ready to count as available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// RevisionHistoryLimit old ReplicaSets are kept for rollbacks
	// (default 10).
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	Paused               bool   `json:"paused,omitempty"`
	// ProgressDeadlineSeconds without progress fail the rollout
	// (Progressing False, ProgressDeadlineExceeded; default 600).
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// The strategies of a Deployment.
const (
	DeploymentRollingUpdate = "RollingUpdate"
	DeploymentRecreate      = "Recreate"
)

type DeploymentStrategy struct {
	// Type is RollingUpdate (the default) or Recreate.
	Type          string                   `json:"type,omitempty"`
	RollingUpdate *RollingUpdateDeployment `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDeployment bounds a rolling update: MaxSurge pods over the
// desired count, MaxUnavailable under it, each a number or a percentage
// of the desired count (default 25% each).
type RollingUpdateDeployment struct {
	MaxUnavailable *IntOrString `json:"maxUnavailable,omitempty"`
	MaxSurge       *IntOrString `json:"maxSurge,omitempty"`
}

type DeploymentStatus struct {
	ObservedGeneration  int64                 `json:"observedGeneration,omitempty"`
	Replicas            int32                 `json:"replicas,omitempty"`
	UpdatedReplicas     int32                 `json:"updatedReplicas,omitempty"`
	ReadyReplicas       int32                 `json:"readyReplicas,omitempty"`
	AvailableReplicas   int32                 `json:"availableReplicas,omitempty"`
	UnavailableReplicas int32                 `json:"unavailableReplicas,omitempty"`
	Conditions          []DeploymentCondition `json:"conditions,omitempty"`
	CollisionCount      *int32                `json:"collisionCount,omitempty"`
}

// The conditions of a Deployment, and the reasons kubectl rollout reads.
const (
	DeploymentAvailable   = "Available"
	DeploymentProgressing = "Progressing"

	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonNewReplicaSetCreated       = "NewReplicaSetCreated"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

type DeploymentCondition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	LastUpdateTime     *time.Time `json:"lastUpdateTime,omitempty"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
	Reason             string     `json:"reason,omitempty"`
	Message            string     `json:"message,omitempty"`
}

type DeploymentList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Deployment `json:"items"`
}

// Annotations and labels of Deployments' ReplicaSets, as Kubernetes names
// them (kubectl rollout history and undo read them).
const (
	AnnotationRevision        = "deployment.kubernetes.io/revision"
	AnnotationDesiredReplicas = "deployment.kubernetes.io/desired-replicas"
	AnnotationMaxReplicas     = "deployment.kubernetes.io/max-replicas"
	AnnotationChangeCause     = "kubernetes.io/change-cause"
	LabelPodTemplateHash      = "pod-template-hash"
)
