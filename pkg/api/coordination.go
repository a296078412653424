package api

import (
	"encoding/json"
	"time"

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
	AcquireTime      *MicroTime `json:"acquireTime,omitempty"`
	RenewTime        *MicroTime `json:"renewTime,omitempty"`
	LeaseTransitions *int32     `json:"leaseTransitions,omitempty"`
	// Strategy and PreferredHolder (coordinated leader election) are
	// stored; holders take leases as they come.
	Strategy        *coordinationv1.CoordinatedLeaseStrategy `json:"strategy,omitempty"`
	PreferredHolder *string                                  `json:"preferredHolder,omitempty"`
}

// MicroTime is Kubernetes' MicroTime (six digits of a second on the
// wire) that also reads any RFC 3339 time: the Leases minik8s stored
// before it wrote six digits have the digits their time had, and must
// still be read after an upgrade.
type MicroTime struct{ metav1.MicroTime }

// NewMicroTime is t as a MicroTime.
func NewMicroTime(t time.Time) *MicroTime { return &MicroTime{metav1.NewMicroTime(t)} }

func (t *MicroTime) UnmarshalJSON(b []byte) error {
	if err := t.MicroTime.UnmarshalJSON(b); err == nil {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.MicroTime = metav1.NewMicroTime(parsed.Local())
	return nil
}

type LeaseList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Lease `json:"items"`
}
