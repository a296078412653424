package api

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Lease is coordination.k8s.io/v1's Lease: a holder that must renew it
// before renewTime + leaseDurationSeconds, or others may take what it held.
// Function runners each hold one (see pkg/function's runner names).
type Lease struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       LeaseSpec `json:"spec,omitempty"`
}

type LeaseSpec struct {
	HolderIdentity       *string `json:"holderIdentity,omitempty"`
	LeaseDurationSeconds *int32  `json:"leaseDurationSeconds,omitempty"`
	// AcquireTime and RenewTime are Kubernetes' MicroTimes, whose JSON
	// has exactly six digits of a second: client-go reads no other.
	AcquireTime      *metav1.MicroTime `json:"acquireTime,omitempty"`
	RenewTime        *metav1.MicroTime `json:"renewTime,omitempty"`
	LeaseTransitions *int32            `json:"leaseTransitions,omitempty"`
	// Strategy and PreferredHolder (coordinated leader election) are
	// stored; holders take leases as they come.
	Strategy        *coordinationv1.CoordinatedLeaseStrategy `json:"strategy,omitempty"`
	PreferredHolder *string                                  `json:"preferredHolder,omitempty"`
}

type LeaseList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Lease `json:"items"`
}
