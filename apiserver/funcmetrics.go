package apiserver

import (
	"github.com/prometheus/client_golang/prometheus"

	"minik8s/pkg/api"
)

// funcMetrics are the function call figures on /metrics, as a FaaS
// operator expects them: calls by outcome, step latency, cold starts.
type funcMetrics struct {
	calls      *prometheus.CounterVec
	steps      *prometheus.HistogramVec
	coldStarts *prometheus.CounterVec
}

func newFuncMetrics(reg prometheus.Registerer) *funcMetrics {
	m := &funcMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_func_calls_total", Help: "Function calls (instances) ended, by first function and outcome.",
		}, []string{"function", "status"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "apiserver_func_step_duration_seconds", Help: "One step of a chain as the caller sees it, cold start included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18),
		}, []string{"function"}),
		coldStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_func_cold_starts_total", Help: "Steps that found no ready pod and waited for one.",
		}, []string{"function"}),
	}
	reg.MustRegister(m.calls, m.steps, m.coldStarts)
	return m
}

func (m *funcMetrics) ended(inst *api.FuncInstance) {
	m.calls.WithLabelValues(inst.Spec.Function, inst.Status.Phase).Inc()
}

func (m *funcMetrics) step(rec *api.FuncStepRecord) {
	m.steps.WithLabelValues(rec.Function).Observe(float64(rec.DurationMs) / 1000)
}
