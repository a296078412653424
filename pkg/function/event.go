package function

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// A call to a function pod (POST /invoke, or POST /) carries the call's
// argument as its body and the event it came as in headers, so that a
// runtime in any language can read both:
//
//   - CloudEvents binary mode: Ce-Specversion, Ce-Id, Ce-Source, Ce-Type,
//     Ce-Time, Ce-Subject (when set), and Content-Type the event's
//     datacontenttype. Any CloudEvents SDK reads the call as an event.
//   - HeaderEvent: the event's metadata as JSON (EventMetadata), ASCII only
//     (other characters as \u escapes).
//   - HeaderContext: the call's context as JSON (CallContext), ASCII only.
//   - TimeoutHeader: the call's timeout in seconds.
//
// The pod answers 200 with Result as JSON; a function that failed is still
// a 200, with Result.Error set. A call with HeaderSends: stream may first
// answer SendLines, one JSON object per line, each a send the function
// made and waits on: the caller delivers it and POSTs SendAck to
// SentPath, and the function's send returns, or raises with the ack's
// error. A runtime that does not stream answers the Result alone, with
// its sends in it, which the caller delivers after. A runtime serves GET /readyz (200 once it
// takes calls, else 503) and GET /healthz (200 while it lives) on the same
// port, $PORT, which the kubelet sets.
const (
	HeaderEvent   = "X-Func-Event"
	HeaderContext = "X-Func-Context"
	HeaderSends   = "X-Func-Sends"
	// SendsStream is HeaderSends' value asking for sends as they happen.
	SendsStream = "stream"
	// SentPath takes the acknowledgement of a streamed send.
	SentPath = "/invoke/sent"
)

// SendLine is a send a call streams while it waits for its delivery.
type SendLine struct {
	Send Send `json:"send"`
	// Call is the call's token (random, known only to the caller) and Seq
	// the send's number in the call, from 0.
	Call string `json:"call"`
	Seq  int    `json:"seq"`
}

// SendAck says how the delivery of a streamed send went.
type SendAck struct {
	Call  string `json:"call"`
	Seq   int    `json:"seq"`
	Error string `json:"error,omitempty"`
}

// EventMetadata is what a function taking run(event, context) finds in
// event["metadata"]: the CloudEvent's attributes, and how it arrived.
type EventMetadata = api.FuncEvent

// CallContext is what a function taking run(event, context) finds in
// context. The names are Kubeless's (seed 002).
type CallContext struct {
	FunctionName string `json:"function-name"`
	Namespace    string `json:"namespace"`
	Runtime      string `json:"runtime"`
	// Timeout is the call's bound in seconds.
	Timeout int `json:"timeout"`
	// MemoryLimit is the pod's memory limit in bytes, "" when unbounded.
	MemoryLimit string `json:"memory-limit"`
	InstanceID  string `json:"instance-id"`
	// Step is the step of the chain the call is, from 1.
	Step int `json:"step"`
	// Traceparent is the W3C trace context of the step's span: the pod's
	// spans go under it.
	Traceparent string `json:"traceparent,omitempty"`
	// Trigger names the trigger that started the call: "" for a call of
	// the function API, else TYPE/NAME.
	Trigger string `json:"trigger"`
	// Config is the configuration of the trigger's app, merged with the
	// trigger's own.
	Config map[string]string `json:"config"`
	// Schedule is the cron expression of the schedule trigger that made
	// the call (seed 002's "Function schedule").
	Schedule string `json:"schedule,omitempty"`
	// Outputs name the function's outputs, which minik8s.send takes.
	Outputs []string `json:"outputs,omitempty"`
}

// CallRequest is a synchronous call handed to a function runner.
type CallRequest struct {
	// Function is the function called, or one of its revisions (NAME@N).
	Namespace, Function, ID string
	Arg                     []byte
	// Event is the event the call came as (nil: a plain call).
	Event *api.FuncEvent
	// Trigger is the trigger that made the call, if any.
	Trigger *api.FuncTriggerRef
	// Wait bounds the call: past it, it goes on asynchronously.
	Wait time.Duration
	// Traceparent is the caller's W3C trace context, if it sent one.
	Traceparent string
	// AcceptEvent: the caller takes the outcome as a CloudEvent (Accept:
	// application/cloudevents+json), its callback included.
	AcceptEvent bool
}

// SetEventHeaders puts ev on a request in CloudEvents binary mode, and whole
// in HeaderEvent, with cc in HeaderContext.
func SetEventHeaders(h http.Header, ev *api.FuncEvent, cc *CallContext) {
	h.Set("Ce-Specversion", ceValue(ev.SpecVersion))
	h.Set("Ce-Id", ceValue(ev.ID))
	h.Set("Ce-Source", ceValue(ev.Source))
	h.Set("Ce-Type", ceValue(ev.Type))
	if ev.Time != "" {
		h.Set("Ce-Time", ceValue(ev.Time))
	}
	if ev.Subject != "" {
		h.Set("Ce-Subject", ceValue(ev.Subject))
	}
	if ev.DataContentType != "" {
		h.Set("Content-Type", ev.DataContentType)
	}
	h.Set(HeaderEvent, ASCIIJSON(ev))
	if cc != nil {
		h.Set(HeaderContext, ASCIIJSON(cc))
	}
}

// ASCIIJSON is v as JSON with every non-ASCII character escaped, so that
// it travels in an HTTP header whatever it holds.
func ASCIIJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	ascii := true
	for _, c := range b {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	var sb strings.Builder
	for _, r := range string(b) {
		switch {
		case r < 0x80:
			sb.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&sb, "\\u%04x\\u%04x", 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&sb, "\\u%04x", r)
		}
	}
	return sb.String()
}

// HeaderHandoffEvent carries a synchronous call's event from the apiserver
// to the runner it hands the call to, as base64 of its JSON.
const HeaderHandoffEvent = "X-Minik8s-Event"

// SetHandoffEvent puts ev on a hand-over request.
func SetHandoffEvent(h http.Header, ev *api.FuncEvent) {
	if ev == nil {
		return
	}
	b, err := json.Marshal(ev)
	if err == nil {
		h.Set(HeaderHandoffEvent, base64.RawURLEncoding.EncodeToString(b))
	}
}

// ReadHandoffEvent reads the event of a hand-over request (nil: none).
func ReadHandoffEvent(h http.Header) (*api.FuncEvent, error) {
	v := h.Get(HeaderHandoffEvent)
	if v == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	ev := &api.FuncEvent{}
	if err == nil {
		err = json.Unmarshal(b, ev)
	}
	if err != nil {
		return nil, errdefs.BadRequest(HeaderHandoffEvent, "not base64 of an event's JSON: %v", err)
	}
	return ev, nil
}

// ceValue percent-encodes an attribute for a Ce-* header, as the
// CloudEvents HTTP binding has it: space, '"', '%' and anything outside
// printable ASCII (control characters, UTF-8) as %XX.
func ceValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c > '~' || c == '"' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
