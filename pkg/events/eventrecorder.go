package events

import "minik8s/pkg/api"

// EventRecorder is what a component needs to record events: a *Recorder,
// or a fake in tests. It mirrors client-go's record.EventRecorder.
type EventRecorder interface {
	Eventf(obj api.Object, typ, reason, format string, args ...any)
}

var _ EventRecorder = (*Recorder)(nil)

// Eventf records an event through r; a nil r records nothing, so that a
// component may run without events.
func Eventf(r EventRecorder, obj api.Object, typ, reason, format string, args ...any) {
	if r != nil {
		r.Eventf(obj, typ, reason, format, args...)
	}
}
