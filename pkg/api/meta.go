// Package api holds the minik8s object types in the Kubernetes shape:
// Kind{TypeMeta, ObjectMeta, Spec, Status} with Kubernetes' JSON names.
package api

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TypeMeta names the kind and version of an object on the wire.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// ObjectMeta is the metadata every stored object carries.
type ObjectMeta struct {
	Name string `json:"name,omitempty"`
	// GenerateName, on a create without a name, is the prefix of the
	// name the server makes (five random characters added), as
	// Kubernetes does.
	GenerateName      string     `json:"generateName,omitempty"`
	Namespace         string     `json:"namespace,omitempty"`
	UID               string     `json:"uid,omitempty"`
	ResourceVersion   string     `json:"resourceVersion,omitempty"`
	Generation        int64      `json:"generation,omitempty"`
	CreationTimestamp *time.Time `json:"creationTimestamp,omitempty"`
	DeletionTimestamp *time.Time `json:"deletionTimestamp,omitempty"`
	// DeletionGracePeriodSeconds is how long the node agent waits between
	// SIGTERM and SIGKILL once DeletionTimestamp is set.
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference  `json:"ownerReferences,omitempty"`
	// Finalizers must all be removed before a deleted object goes: until
	// then it stays, with DeletionTimestamp set. foregroundDeletion is the
	// garbage collector's, on an owner deleted in the foreground.
	Finalizers []string `json:"finalizers,omitempty"`
	// ManagedFields says which manager set which field (server-side
	// apply's ownership), as Kubernetes keeps it: written by the server on
	// every write through the API.
	ManagedFields []metav1.ManagedFieldsEntry `json:"managedFields,omitempty"`
	// SelfLink is read and dropped: Kubernetes no longer sets it.
	SelfLink string `json:"selfLink,omitempty"`
}

// FinalizerForeground keeps an owner deleted with propagationPolicy
// Foreground until its dependents are gone.
const FinalizerForeground = "foregroundDeletion"

// OwnerReference ties an object to the one that made it, for garbage collection.
type OwnerReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Controller *bool  `json:"controller,omitempty"`
	// BlockOwnerDeletion is what Kubernetes' clients send; a foreground
	// deletion here waits for every dependent, blocking or not.
	BlockOwnerDeletion *bool `json:"blockOwnerDeletion,omitempty"`
}

// ListMeta is the metadata of a list: the store revision it was read at.
type ListMeta struct {
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// GetObjectMeta gives generic code (storage, apiserver, client) access to the
// metadata of any kind that embeds ObjectMeta.
func (m *ObjectMeta) GetObjectMeta() *ObjectMeta { return m }

// GetTypeMeta gives generic code access to the kind and version.
func (t *TypeMeta) GetTypeMeta() *TypeMeta { return t }

// Object is what every stored kind satisfies by embedding TypeMeta and ObjectMeta.
type Object interface {
	GetObjectMeta() *ObjectMeta
	GetTypeMeta() *TypeMeta
}

// EventType is the type of a watch event.
type EventType string

const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// Condition status values, as Kubernetes spells them.
const (
	ConditionTrue    = "True"
	ConditionFalse   = "False"
	ConditionUnknown = "Unknown"
)

// Status is the body of every error answer. On the Kubernetes routes it
// is also Kubernetes' meta/v1 Status (kind, status, message, details), as
// kubectl and client-go read it; the function API's answers keep the
// reference design's fields only (error, reason, field, code).
type Status struct {
	TypeMeta `json:",inline"`
	// Status is "Failure" on the Kubernetes routes.
	Status  string         `json:"status,omitempty"`
	Message string         `json:"message,omitempty"`
	Error   string         `json:"error"`
	Reason  string         `json:"reason,omitempty"`
	Details *StatusDetails `json:"details,omitempty"`
	Field   string         `json:"field,omitempty"`
	Code    int            `json:"code,omitempty"`
}

// StatusDetails names the object an error is about, and the fields at
// fault.
type StatusDetails struct {
	Name   string        `json:"name,omitempty"`
	Group  string        `json:"group,omitempty"`
	Kind   string        `json:"kind,omitempty"`
	Causes []StatusCause `json:"causes,omitempty"`
	// RetryAfterSeconds: when the client may try again.
	RetryAfterSeconds int32 `json:"retryAfterSeconds,omitempty"`
}

type StatusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
}
