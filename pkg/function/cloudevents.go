package function

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/cloudevents/sdk-go/v2/types"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Calls arrive as CloudEvents 1.0 (seed 001): a request in binary or
// structured mode is read as the event it is; any other request becomes an
// event of the type its path gives, whose data is the body. Answers go back
// as CloudEvents to a caller that accepts them.
const (
	// ContentTypeCloudEvent is the structured mode's media type, and what a
	// caller puts in Accept to get its answer as an event.
	ContentTypeCloudEvent = "application/cloudevents+json"

	// Types of the events the platform makes.
	EventTypeCall = "io.minik8s.func.call"
	// EventTypeOutput: a call made through another call's output.
	EventTypeOutput   = "io.minik8s.func.output"
	EventTypeHTTP     = "io.minik8s.trigger.http"
	EventTypeSchedule = "io.minik8s.trigger.schedule"
	EventTypeQueue    = "io.minik8s.trigger.queue"
	EventTypeResult   = "io.minik8s.func.result"
	EventTypeError    = "io.minik8s.func.error"

	// maxRecordedHeaders bounds the request headers an event records.
	maxRecordedHeaders = 16 << 10
)

// ReadEvent reads the call a request carries, its body already read: the
// CloudEvent in binary or structured mode, or else plain, an event made of
// the body. It returns the event and its data, the call's argument. A
// request that claims to be an event and is not a valid one is a bad
// request naming the attribute.
func ReadEvent(header http.Header, body []byte, plain api.FuncEvent) (*api.FuncEvent, []byte, error) {
	msg := cehttp.NewMessage(header, io.NopCloser(bytes.NewReader(body)))
	if msg.ReadEncoding() == binding.EncodingUnknown {
		// The SDK knows a binary event by a version it reads: any other
		// Ce-Specversion is an event this platform cannot read, not a
		// plain call whose Ce-* headers would silently go.
		if v := header.Get("Ce-Specversion"); v != "" {
			return nil, nil, errdefs.BadRequest("cloudevent.specversion", "%q is not a CloudEvents version read here: send %s (or %s)",
				v, cloudevents.VersionV1, cloudevents.VersionV03)
		}
		ev := plain
		ev.SpecVersion = cloudevents.VersionV1
		if ev.DataContentType == "" {
			ev.DataContentType = header.Get("Content-Type")
		}
		return &ev, body, nil
	}
	e, err := binding.ToEvent(context.Background(), msg)
	if err == nil {
		err = e.Validate()
	}
	if err != nil {
		return nil, nil, errdefs.BadRequest("cloudevent", "the request is not a valid CloudEvent: %v", err)
	}
	// A 0.3 event (seed 001 was written against it) is read as the 1.0
	// event it converts to, the version functions and callbacks get; the
	// SDK reads no other version (binary or structured).
	if e.SpecVersion() == cloudevents.VersionV03 {
		e.SetSpecVersion(cloudevents.VersionV1)
		// The data is decoded already: its 0.3 encoding no longer applies.
		e.SetExtension("datacontentencoding", nil)
	}
	ev := &api.FuncEvent{
		SpecVersion: e.SpecVersion(), ID: e.ID(), Source: e.Source(), Type: e.Type(),
		Subject: e.Subject(), DataContentType: e.DataContentType(),
	}
	if !e.Time().IsZero() {
		ev.Time = e.Time().UTC().Format(time.RFC3339Nano)
	}
	for k, v := range e.Extensions() {
		s, err := types.Format(v)
		if err != nil {
			continue
		}
		if ev.Extensions == nil {
			ev.Extensions = map[string]string{}
		}
		ev.Extensions[k] = s
	}
	return ev, e.Data(), nil
}

// RecordRequest notes on ev how an HTTP call arrived: method, path, query
// and headers, without credentials and without the CloudEvents headers
// (they are ev's attributes), within a bound.
func RecordRequest(ev *api.FuncEvent, r *http.Request) {
	ev.Method, ev.Path = r.Method, r.URL.Path
	size := len(r.URL.RawQuery)
	if q := r.URL.Query(); len(q) > 0 && size <= maxRecordedHeaders {
		for k := range q {
			if sensitive(k) {
				q[k] = []string{redacted}
			}
		}
		ev.Query = q
	}
	for k, vs := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "ce-") {
			continue
		}
		if sensitive(k) {
			vs = []string{redacted}
		}
		v := strings.Join(vs, ", ")
		if size += len(k) + len(v); size > maxRecordedHeaders {
			break
		}
		if ev.Headers == nil {
			ev.Headers = map[string]string{}
		}
		ev.Headers[k] = v
	}
}

// AcceptsEvent says whether a caller asked for its answer as a CloudEvent.
func AcceptsEvent(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == ContentTypeCloudEvent {
			return true
		}
	}
	return false
}

// OutcomeEvent is the answer of an ended call as a structured CloudEvent:
// a result event whose data is the result (JSON when the result is JSON,
// else text), or an error event whose data is {"message","type","trace"}.
// source names where the call was made.
func OutcomeEvent(inst *api.FuncInstance, source string) ([]byte, error) {
	e := cloudevents.NewEvent(cloudevents.VersionV1)
	e.SetID(inst.Name + "/" + inst.Status.Phase)
	e.SetSource(source)
	e.SetSubject(inst.Name)
	e.SetTime(time.Now())
	if inst.Status.CompletionTime != nil {
		e.SetTime(*inst.Status.CompletionTime)
	}
	var err error
	if inst.Status.Phase == api.InstanceFailed {
		e.SetType(EventTypeError)
		err = e.SetData(cloudevents.ApplicationJSON, FailureOf(inst))
	} else {
		e.SetType(EventTypeResult)
		switch r := string(inst.Status.Result); {
		case r != "" && json.Valid([]byte(r)):
			err = e.SetData(cloudevents.ApplicationJSON, json.RawMessage(r))
		case utf8.ValidString(r):
			// A string, not bytes: bytes would travel as data_base64.
			err = e.SetData(cloudevents.TextPlain, r)
		default:
			err = e.SetData("application/octet-stream", []byte(r))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("making the answer event: %w", err)
	}
	return json.Marshal(e)
}

// FailureOf is a failed instance's error as an error event carries it.
func FailureOf(inst *api.FuncInstance) api.FuncError {
	if f := inst.Status.Failure; f != nil {
		return *f
	}
	return api.FuncError{Message: inst.Status.Error, Type: FailureCall}
}

// FailureCall types the failures of the platform, not of the function's
// code: a function not found, no pod in time, a hop limit, a size limit.
const FailureCall = "CallFailed"

// redacted stands for a credential in a recorded request.
const redacted = "[redacted]"

// sensitiveWords mark header and query names that carry credentials:
// Authorization and Cookie, and the tokens, keys, secrets and signatures
// webhooks send (X-Gitlab-Token, X-Api-Key, X-Hub-Signature, ?access_token=).
var sensitiveWords = []string{"auth", "cookie", "token", "secret", "password", "passwd", "signature", "api-key", "apikey", "api_key", "session", "credential"}

// sensitive says whether a header or query parameter named name carries a
// credential: an instance records it as [redacted], for whoever reads
// instances must not read the caller's secrets.
func sensitive(name string) bool {
	n := strings.ToLower(name)
	if n == "key" || n == "sig" {
		return true
	}
	for _, w := range sensitiveWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
