package api

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Namespace groups objects; deleting it deletes everything in it.
type Namespace struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       NamespaceSpec   `json:"spec,omitempty"`
	Status     NamespaceStatus `json:"status,omitempty"`
}

type NamespaceSpec struct {
	Finalizers []string `json:"finalizers,omitempty"`
}

type NamespaceStatus struct {
	// Phase is Active, or Terminating while its objects are deleted.
	Phase string `json:"phase,omitempty"`
}

const (
	NamespaceActive      = "Active"
	NamespaceTerminating = "Terminating"
	// FinalizerKubernetes holds a namespace until its objects are gone.
	FinalizerKubernetes = "kubernetes"
)

// Namespaces that always exist.
const (
	NamespaceSystem = "kube-system"
	NamespacePublic = "kube-public"
)

type NamespaceList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Namespace `json:"items"`
}

// Secret holds small pieces of sensitive data, readable only with the
// verb on secrets.
type Secret struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Type       string            `json:"type,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	// StringData is merged into Data when written, as in Kubernetes.
	StringData map[string]string `json:"stringData,omitempty"`
	Immutable  *bool             `json:"immutable,omitempty"`
}

const (
	SecretTypeOpaque              = "Opaque"
	SecretTypeServiceAccountToken = "kubernetes.io/service-account-token"
	// ServiceAccountNameAnnotation names the ServiceAccount a token Secret
	// belongs to; ServiceAccountUIDAnnotation its UID.
	ServiceAccountNameAnnotation = "kubernetes.io/service-account.name"
	ServiceAccountUIDAnnotation  = "kubernetes.io/service-account.uid"
	// SecretTypeTLS holds a certificate chain and its key (PEM) under
	// TLSCertKey and TLSPrivateKeyKey.
	SecretTypeTLS    = "kubernetes.io/tls"
	TLSCertKey       = "tls.crt"
	TLSPrivateKeyKey = "tls.key"
)

type SecretList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Secret `json:"items"`
}

// ServiceAccount is the identity of the programs in a pod.
type ServiceAccount struct {
	TypeMeta                     `json:",inline"`
	ObjectMeta                   `json:"metadata,omitempty"`
	Secrets                      []ObjectReference `json:"secrets,omitempty"`
	AutomountServiceAccountToken *bool             `json:"automountServiceAccountToken,omitempty"`
	// ImagePullSecrets is stored; images are pulled without credentials.
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// DefaultServiceAccount exists in every namespace.
const DefaultServiceAccount = "default"

type ServiceAccountList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []ServiceAccount `json:"items"`
}

// TokenRequest is authentication.k8s.io/v1 TokenRequest: a token of a
// ServiceAccount, asked for at .../serviceaccounts/NAME/token (the
// kubelet asks one for each pod it runs).
type TokenRequest struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       TokenRequestSpec   `json:"spec"`
	Status     TokenRequestStatus `json:"status"`
}

type TokenRequestSpec struct {
	Audiences []string `json:"audiences,omitempty"`
	// ExpirationSeconds is the lifetime asked for (10 minutes to 48 hours;
	// default one hour).
	ExpirationSeconds *int64                `json:"expirationSeconds,omitempty"`
	BoundObjectRef    *BoundObjectReference `json:"boundObjectRef,omitempty"`
}

// BoundObjectReference names the pod a token is for.
type BoundObjectReference struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
}

type TokenRequestStatus struct {
	Token               string    `json:"token"`
	ExpirationTimestamp time.Time `json:"expirationTimestamp"`
}
