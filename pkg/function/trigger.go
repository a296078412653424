package function

import (
	"strings"

	"minik8s/pkg/api"
)

// TriggerSource says what kind a trigger is and what it listens to:
// "METHODS PATH" on the gateway, a cron expression (with its time zone),
// or a NATS subject.
func TriggerSource(t *api.Trigger) (kind, source string) {
	switch s := t.Spec; {
	case s.HTTP != nil:
		methods := "*"
		if len(s.HTTP.Methods) > 0 {
			methods = strings.Join(s.HTTP.Methods, ",")
		}
		return api.TriggerHTTP, methods + " " + s.HTTP.Path
	case s.Schedule != nil:
		if s.Schedule.TimeZone != "" {
			return api.TriggerSchedule, s.Schedule.Cron + " (" + s.Schedule.TimeZone + ")"
		}
		return api.TriggerSchedule, s.Schedule.Cron
	case s.Queue != nil:
		return api.TriggerQueue, s.Queue.Subject
	}
	return "", ""
}
