// Package tracing is how a call's trace is made and sent: W3C trace
// context ids, the spans a call's components record (kept with the
// instance, api.FuncSpan), and an OTLP over HTTP exporter for any
// collector or Jaeger when an endpoint is set.
package tracing

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"time"

	"minik8s/pkg/api"
)

// Header carries the W3C trace context.
const Header = "traceparent"

// Parse reads a traceparent, "00-TRACEID-SPANID-FLAGS".
func Parse(tp string) (traceID, spanID string, ok bool) {
	parts := strings.Split(strings.TrimSpace(tp), "-")
	if len(parts) != 4 || len(parts[0]) != 2 || !isHex(parts[1], 32) || !isHex(parts[2], 16) ||
		parts[1] == strings.Repeat("0", 32) || parts[2] == strings.Repeat("0", 16) {
		return "", "", false
	}
	return parts[1], parts[2], true
}

// Valid is tp when it is a valid traceparent, else "": what a component
// passes on of a caller's header.
func Valid(tp string) string {
	if _, _, ok := Parse(tp); !ok {
		return ""
	}
	return tp
}

// Format is the traceparent of a sampled span.
func Format(traceID, spanID string) string { return "00-" + traceID + "-" + spanID + "-01" }

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// NewTraceID is a random trace id.
func NewTraceID() string {
	return NewSpanID() + NewSpanID()
}

// NewSpanID is a random span id.
func NewSpanID() string {
	var b [8]byte
	for b == [8]byte{} {
		v := rand.Uint64()
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
	}
	return hex.EncodeToString(b[:])
}

// Root is the trace of a call and the id of its root span: derived from
// the instance's name, so that whichever runner drives the call (one that
// took it over included) names them alike; under the caller's trace when
// the call came with a traceparent.
func Root(inst *api.FuncInstance) (traceID, rootSpanID, parentSpanID string) {
	sum := sha256.Sum256([]byte("minik8s-trace/" + inst.Namespace + "/" + inst.Name))
	traceID, rootSpanID = hex.EncodeToString(sum[:16]), hex.EncodeToString(sum[16:24])
	if t, s, ok := Parse(inst.Spec.Traceparent); ok {
		traceID, parentSpanID = t, s
	}
	return traceID, rootSpanID, parentSpanID
}

// Span is a span of a component.
func Span(name, service, traceID, parent string, start, end time.Time) api.FuncSpan {
	return api.FuncSpan{Name: name, Service: service, TraceID: traceID, SpanID: NewSpanID(), ParentSpanID: parent,
		StartNs: start.UnixNano(), EndNs: end.UnixNano()}
}
