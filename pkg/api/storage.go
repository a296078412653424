package api

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// StorageGroup serves StorageClasses.
const StorageGroup = "storage.k8s.io"

// PersistentVolume (v1) is a piece of storage a claim binds to: on
// minik8s a directory on one node, which the local-path provisioner made
// for a claim (or an admin's hostPath or local volume).
type PersistentVolume struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PersistentVolumeSpec   `json:"spec,omitempty"`
	Status     PersistentVolumeStatus `json:"status,omitempty"`
}

// The persistentVolumeReclaimPolicy values.
const (
	ReclaimDelete = "Delete"
	ReclaimRetain = "Retain"
)

type PersistentVolumeSpec struct {
	Capacity    ResourceList `json:"capacity,omitempty"`
	AccessModes []string     `json:"accessModes,omitempty"`
	// ClaimRef is the claim bound to the volume (or the one it is kept
	// for).
	ClaimRef                      *ObjectReference `json:"claimRef,omitempty"`
	PersistentVolumeReclaimPolicy string           `json:"persistentVolumeReclaimPolicy,omitempty"`
	StorageClassName              string           `json:"storageClassName,omitempty"`
	MountOptions                  []string         `json:"mountOptions,omitempty"`
	VolumeMode                    *string          `json:"volumeMode,omitempty"`
	// NodeAffinity pins the pods using the volume to the nodes it is on.
	NodeAffinity *corev1.VolumeNodeAffinity `json:"nodeAffinity,omitempty"`
	// One source: a directory on the node.
	HostPath *corev1.HostPathVolumeSource `json:"hostPath,omitempty"`
	Local    *corev1.LocalVolumeSource    `json:"local,omitempty"`
}

// The volume phases.
const (
	VolumePending   = "Pending"
	VolumeAvailable = "Available"
	VolumeBound     = "Bound"
	VolumeReleased  = "Released"
	VolumeFailed    = "Failed"
)

type PersistentVolumeStatus struct {
	Phase   string `json:"phase,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// LastPhaseTransitionTime is Kubernetes' too.
	LastPhaseTransitionTime *time.Time `json:"lastPhaseTransitionTime,omitempty"`
}

type PersistentVolumeList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []PersistentVolume `json:"items"`
}

// PersistentVolumeClaim (v1) asks for storage; a pod mounts the volume
// bound to it by the claim's name.
type PersistentVolumeClaim struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PersistentVolumeClaimSpec   `json:"spec,omitempty"`
	Status     PersistentVolumeClaimStatus `json:"status,omitempty"`
}

type PersistentVolumeClaimSpec struct {
	AccessModes []string       `json:"accessModes,omitempty"`
	Selector    *LabelSelector `json:"selector,omitempty"`
	// Resources.Requests["storage"] is the size asked for.
	Resources        VolumeResourceRequirements `json:"resources,omitempty"`
	VolumeName       string                     `json:"volumeName,omitempty"`
	StorageClassName *string                    `json:"storageClassName,omitempty"`
	VolumeMode       *string                    `json:"volumeMode,omitempty"`
}

type VolumeResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

// The claim phases.
const (
	ClaimPending = "Pending"
	ClaimBound   = "Bound"
	ClaimLost    = "Lost"
)

// ResourceStorage is the resource a claim asks for and a volume has.
const ResourceStorage = "storage"

type PersistentVolumeClaimStatus struct {
	Phase       string       `json:"phase,omitempty"`
	AccessModes []string     `json:"accessModes,omitempty"`
	Capacity    ResourceList `json:"capacity,omitempty"`
	// Conditions are Kubernetes' (resizing; minik8s writes none).
	Conditions []corev1.PersistentVolumeClaimCondition `json:"conditions,omitempty"`
}

type PersistentVolumeClaimList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []PersistentVolumeClaim `json:"items"`
}

// StorageClass (storage.k8s.io/v1) names a provisioner that makes volumes
// for claims of the class.
type StorageClass struct {
	TypeMeta      `json:",inline"`
	ObjectMeta    `json:"metadata,omitempty"`
	Provisioner   string            `json:"provisioner"`
	Parameters    map[string]string `json:"parameters,omitempty"`
	ReclaimPolicy *string           `json:"reclaimPolicy,omitempty"`
	MountOptions  []string          `json:"mountOptions,omitempty"`
	// AllowVolumeExpansion is Kubernetes'; minik8s's directories have no
	// size to expand.
	AllowVolumeExpansion *bool `json:"allowVolumeExpansion,omitempty"`
	// VolumeBindingMode: Immediate, or WaitForFirstConsumer (a claim is
	// provisioned on the node of the first pod using it).
	VolumeBindingMode *string                       `json:"volumeBindingMode,omitempty"`
	AllowedTopologies []corev1.TopologySelectorTerm `json:"allowedTopologies,omitempty"`
}

// The volumeBindingMode values.
const (
	VolumeBindingImmediate            = "Immediate"
	VolumeBindingWaitForFirstConsumer = "WaitForFirstConsumer"
)

// The annotations Kubernetes and k3s's local-path provisioner use: the
// default class, the node a WaitForFirstConsumer claim's pod went to, the
// provisioner asked, and the volume's provisioner.
const (
	AnnotationDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"
	AnnotationSelectedNode        = "volume.kubernetes.io/selected-node"
	AnnotationStorageProvisioner  = "volume.kubernetes.io/storage-provisioner"
	AnnotationProvisionedBy       = "pv.kubernetes.io/provisioned-by"
	AnnotationBoundByController   = "pv.kubernetes.io/bound-by-controller"
	AnnotationBindCompleted       = "pv.kubernetes.io/bind-completed"
)

type StorageClassList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []StorageClass `json:"items"`
}

// PersistentVolumeClaimVolumeSource mounts the volume bound to a claim of
// the pod's namespace.
type PersistentVolumeClaimVolumeSource = corev1.PersistentVolumeClaimVolumeSource

// The default StorageClass the apiserver makes, as k3s ships its
// local-path provisioner's: a directory on the node of the claim's first
// pod.
const (
	DefaultStorageClassName = "local-path"
	LocalPathProvisioner    = "rancher.io/local-path"
)

// AnnotationLocalPathDir, on a Node, is where its kubelet keeps the
// local-path provisioner's volumes (k3s's nodePathMap, said by the node
// itself): the provisioner makes a claim's directory there.
const AnnotationLocalPathDir = "minik8s.io/local-path-dir"

// FieldVolumeNode selects PersistentVolumes by the one node their
// required node affinity names (metadata.name In [NODE]), as local-path
// volumes are pinned: a kubelet watches its own node's, and the node
// authorizer lets it list and watch those alone. minik8s's own field:
// Kubernetes selects volumes by name only.
const FieldVolumeNode = "spec.nodeAffinity.nodeName"
