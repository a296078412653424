package funcserver

import (
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
