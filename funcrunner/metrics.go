package funcrunner

import (
	"net/http"
	"time"

	"minik8s/pkg/metrics"
)

// callMetrics are the runner's /metrics: the steps it ran per function, by
// outcome, their durations, the cold starts (steps that waited for a pod)
// and the steps in flight, labelled with namespace and function as
// Prometheus users expect.
type callMetrics struct {
	calls, coldStarts, inFlight, duration *metrics.Vec
}

func newCallMetrics() *callMetrics {
	return &callMetrics{
		calls: metrics.NewCounter("minik8s_function_calls_total", "Calls (chain steps) of a function that ended, by outcome.",
			"namespace", "function", "outcome"),
		coldStarts: metrics.NewCounter("minik8s_function_cold_starts_total", "Calls that waited for a pod of the function.",
			"namespace", "function"),
		inFlight: metrics.NewGauge("minik8s_function_in_flight", "Calls of the function running or waiting now.",
			"namespace", "function"),
		duration: metrics.NewHistogram("minik8s_function_call_duration_seconds", "Calls of the function as the runner saw them, a cold start included.",
			metrics.DurationBounds, "namespace", "function"),
	}
}

func (m *callMetrics) started(ns, fn string) { m.inFlight.Add(1, ns, fn) }

func (m *callMetrics) ended(ns, fn string, failed, cold bool, d time.Duration) {
	m.inFlight.Add(-1, ns, fn)
	outcome := "succeeded"
	if failed {
		outcome = "failed"
	}
	m.calls.Add(1, ns, fn, outcome)
	if cold {
		m.coldStarts.Add(1, ns, fn)
	}
	m.duration.Observe(d.Seconds(), ns, fn)
}

func (m *callMetrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	for _, v := range []*metrics.Vec{m.calls, m.duration, m.coldStarts, m.inFlight} {
		v.Write(w)
	}
}
