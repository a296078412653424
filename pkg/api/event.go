package api

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is core/v1 Event: something that happened to an object, told by a
// component (the scheduler, a kubelet, a controller). Repeats of the same
// event raise Count and LastTimestamp instead of making new ones; events
// expire an hour after they were first made.
type Event struct {
	TypeMeta       `json:",inline"`
	ObjectMeta     `json:"metadata"`
	InvolvedObject ObjectReference `json:"involvedObject"`
	// Reason is a short CamelCase word (Scheduled, BackOff); Message says
	// it for people.
	Reason         string      `json:"reason,omitempty"`
	Message        string      `json:"message,omitempty"`
	Source         EventSource `json:"source,omitempty"`
	FirstTimestamp *time.Time  `json:"firstTimestamp,omitempty"`
	LastTimestamp  *time.Time  `json:"lastTimestamp,omitempty"`
	Count          int32       `json:"count,omitempty"`
	// Type is Normal or Warning.
	Type               string `json:"type,omitempty"`
	ReportingComponent string `json:"reportingComponent,omitempty"`
	ReportingInstance  string `json:"reportingInstance,omitempty"`
	// The events.k8s.io fields, as core/v1 carries them.
	EventTime *metav1.MicroTime   `json:"eventTime,omitempty"`
	Series    *corev1.EventSeries `json:"series,omitempty"`
	Action    string              `json:"action,omitempty"`
	Related   *ObjectReference    `json:"related,omitempty"`
}

type EventSource struct {
	Component string `json:"component,omitempty"`
	Host      string `json:"host,omitempty"`
}

type EventList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Event `json:"items"`
}

// The types of events.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)
