package funcserver

import "minik8s/pkg/function"

// The HTTP contract of a function pod, shared with its callers.
const (
	// PathInvoke runs one call; POST / is accepted too.
	PathInvoke = function.InvokePath
	PathHealth = "/healthz"
	PathReady  = "/readyz"
	PathStats  = "/stats"
	// PathMetrics serves the same counters in Prometheus text format.
	PathMetrics = "/metrics"

	// HeaderTimeout overrides the call timeout, in (possibly fractional) seconds.
	HeaderTimeout = function.TimeoutHeader
)

// Error types funcserver itself produces; a Python exception keeps its own
// class name as type.
const (
	ErrorTimeout      = "Timeout"
	ErrorWorkerExited = "WorkerExited"
	ErrorUnavailable  = "Unavailable"
	ErrorBadRequest   = "BadRequest"
	ErrorTooLarge     = "TooLarge"
)

// Response answers POST /invoke; its type is shared with the apiserver,
// which makes the calls. A function that fails still gets HTTP 200 with
// Error set: the call was made and this is its answer. Requests that are
// refused (not ready, draining, bad header, body too large) get a non-200
// status with the same shape and Error set.
type Response = function.Result

// Error is a failed call: a Python exception or one of the Error* types.
type Error = function.Error

// Readiness answers GET /readyz (200 when Ready, else 503).
type Readiness struct {
	Ready bool `json:"ready"`
	// Status is one of starting, preRun, importing, ready, failed,
	// restarting (all workers died and replacements fail), draining.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Stats answers GET /stats.
type Stats struct {
	// Calls counts answered calls, Errors those whose answer carries an
	// error (Timeouts and WorkerExits included).
	Calls       int64 `json:"calls"`
	Errors      int64 `json:"errors"`
	Timeouts    int64 `json:"timeouts"`
	WorkerExits int64 `json:"workerExits"`
	// Rejected counts requests refused before a call (503, 400, 413).
	Rejected int64 `json:"rejected"`
	InFlight int64 `json:"inFlight"`
	// Queued counts calls in flight that wait for a free worker.
	Queued int64 `json:"queued"`
	// WorkerStarts counts successful imports, replacements included.
	WorkerStarts int64 `json:"workerStarts"`
	Workers      int   `json:"workers"`
	LiveWorkers  int   `json:"liveWorkers"`
	Ready        bool  `json:"ready"`
}
