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

// PassesFilters says whether ev passes every one of filters (a trigger's
// spec.filters): each attribute named equal to its value (exact), or
// starting with it (prefix). An attribute the event lacks passes neither.
func PassesFilters(filters []api.TriggerFilter, ev *api.FuncEvent) bool {
	exact := func(v, want string) bool { return v == want }
	for _, f := range filters {
		if !attributesMatch(ev, f.Exact, exact) || !attributesMatch(ev, f.Prefix, strings.HasPrefix) {
			return false
		}
	}
	return true
}

// attributesMatch says whether ev has every attribute of want, each
// matching its value.
func attributesMatch(ev *api.FuncEvent, want map[string]string, match func(v, want string) bool) bool {
	for k, w := range want {
		if v, ok := eventAttribute(ev, k); !ok || !match(v, w) {
			return false
		}
	}
	return true
}

// eventAttribute is the value of ev's attribute name, and whether it has it.
func eventAttribute(ev *api.FuncEvent, name string) (string, bool) {
	var v string
	switch name {
	case "specversion":
		v = ev.SpecVersion
	case "id":
		v = ev.ID
	case "source":
		v = ev.Source
	case "type":
		v = ev.Type
	case "subject":
		v = ev.Subject
	case "time":
		v = ev.Time
	case "datacontenttype":
		v = ev.DataContentType
	default:
		x, ok := ev.Extensions[name]
		return x, ok
	}
	return v, v != ""
}
