package api

import "time"

// Trigger starts calls of a function (seeds 001 and 002): a route on the
// function gateway, a cron schedule, or a subject of a NATS queue. A
// function has any number of triggers, added and removed while it runs;
// each call a trigger makes is a FuncInstance recording the trigger.
type Trigger struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       TriggerSpec   `json:"spec"`
	Status     TriggerStatus `json:"status,omitempty"`
}

// TriggerSpec names the function and exactly one kind of trigger.
type TriggerSpec struct {
	// Function is the Func (in the trigger's namespace) each event calls.
	Function string `json:"function"`
	// App (in the trigger's namespace) groups triggers; its config is
	// merged with the trigger's own into the events they make.
	App string `json:"app,omitempty"`
	// Config is the trigger's own config: it wins over the app's.
	Config map[string]string `json:"config,omitempty"`
	// Filters are what an event must pass, every one of them, to call the
	// function (Knative's Trigger filters); an event that does not is
	// dropped: an HTTP request gets 204, a message is acknowledged.
	Filters  []TriggerFilter  `json:"filters,omitempty"`
	HTTP     *HTTPTrigger     `json:"http,omitempty"`
	Schedule *ScheduleTrigger `json:"schedule,omitempty"`
	Queue    *QueueTrigger    `json:"queue,omitempty"`
}

// TriggerFilter compares CloudEvents attributes of an event (specversion,
// id, source, type, subject, time, datacontenttype, or an extension's
// name) with values: exactly, or as prefixes. One of the two per filter.
type TriggerFilter struct {
	Exact  map[string]string `json:"exact,omitempty"`
	Prefix map[string]string `json:"prefix,omitempty"`
}

// HTTPTrigger is a path on the function gateway; a request to it calls
// the function synchronously and answers with its result.
type HTTPTrigger struct {
	Path string `json:"path"`
	// Methods the route takes (upper case); empty: every method.
	Methods []string `json:"methods,omitempty"`
}

// ScheduleTrigger calls the function at each tick of a cron expression
// (seconds optional; descriptors such as @every 1s and @hourly).
type ScheduleTrigger struct {
	Cron string `json:"cron"`
	// TimeZone is an IANA name (default UTC).
	TimeZone string `json:"timeZone,omitempty"`
}

// QueueTrigger calls the function for each message of a NATS subject; a
// message is acknowledged when its call has ended, redelivered when the
// call failed, up to MaxDeliver times, then published to
// DeadLetterSubject.
type QueueTrigger struct {
	Subject           string `json:"subject"`
	MaxDeliver        int32  `json:"maxDeliver,omitempty"`
	DeadLetterSubject string `json:"deadLetterSubject,omitempty"`
}

// Trigger types, as a FuncInstance records them.
const (
	TriggerHTTP     = "http"
	TriggerSchedule = "schedule"
	TriggerQueue    = "queue"
)

// DefaultMaxDeliver is how often a queue message is tried by default.
const DefaultMaxDeliver = 5

// TriggerStatus is written by the component that serves the trigger.
type TriggerStatus struct {
	// Ready: the trigger takes events (the route is served, the schedule
	// held, the stream and consumer exist).
	Ready   bool   `json:"ready,omitempty"`
	Message string `json:"message,omitempty"`
	// ServedBy is the runner serving it.
	ServedBy string `json:"servedBy,omitempty"`
	// LastFired is the last tick or event it turned into a call.
	LastFired *time.Time `json:"lastFired,omitempty"`
}

type TriggerList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Trigger `json:"items"`
}

// App groups triggers (seed 001): its config is merged into the event each
// of its triggers makes, where a function reads it as context["config"].
type App struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       AppSpec `json:"spec"`
}

type AppSpec struct {
	Config map[string]string `json:"config,omitempty"`
}

type AppList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []App `json:"items"`
}
