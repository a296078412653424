package funcserver

import (
	"fmt"
	"net/http"
	"os"

	"minik8s/pkg/metrics"
)

// newRunHistogram is what the metrics plugin measures of the runs, by
// outcome, for the pod's /metrics.
func newRunHistogram() *metrics.Vec {
	return metrics.NewHistogram("funcserver_run_seconds", "Runs of the function as the metrics plugin measured them.",
		metrics.DurationBounds, "function", "outcome")
}

func observeRun(h *metrics.Vec, outcome string, seconds float64) {
	h.Observe(seconds, os.Getenv("FUNC_NAME"), outcome)
}

func (s *server) stats() Stats {
	s.mu.Lock()
	inFlight := s.inFlight
	s.mu.Unlock()
	var live, size int
	var starts int64
	if fn := s.fn.Load(); fn != nil {
		live, _ = fn.pool.health()
		size, starts = fn.pool.size, fn.pool.starts.Load()
	}
	return Stats{
		Calls:        s.calls.Load(),
		Errors:       s.errors.Load(),
		Timeouts:     s.timeouts.Load(),
		WorkerExits:  s.workerExits.Load(),
		Rejected:     s.rejected.Load(),
		InFlight:     inFlight,
		Queued:       s.queued.Load(),
		WorkerStarts: starts,
		Workers:      size,
		LiveWorkers:  live,
		Ready:        s.readiness().Ready,
	}
}

func (s *server) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	st := s.stats()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	ready := 0
	if st.Ready {
		ready = 1
	}
	for _, m := range []struct {
		name, kind, help string
		v                int64
	}{
		{"funcserver_calls_total", "counter", "Calls answered.", st.Calls},
		{"funcserver_call_errors_total", "counter", "Calls answered with an error.", st.Errors},
		{"funcserver_call_timeouts_total", "counter", "Calls that timed out.", st.Timeouts},
		{"funcserver_worker_exits_total", "counter", "Workers that exited during a call.", st.WorkerExits},
		{"funcserver_rejected_total", "counter", "Requests refused before a call.", st.Rejected},
		{"funcserver_worker_starts_total", "counter", "Workers that imported the function.", st.WorkerStarts},
		{"funcserver_in_flight", "gauge", "Calls in flight.", st.InFlight},
		{"funcserver_queued", "gauge", "Calls waiting for a free worker.", st.Queued},
		{"funcserver_workers_live", "gauge", "Live workers.", int64(st.LiveWorkers)},
		{"funcserver_ready", "gauge", "1 when ready for calls.", int64(ready)},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", m.name, m.help, m.name, m.kind, m.name, m.v)
	}
	s.runs.Write(w)
}
