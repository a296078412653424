package funcserver

import (
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
)

// runHistogram is what the metrics plugin measures of the runs, by
// outcome, for /metrics (Prometheus histogram of seconds).
type runHistogram struct {
	mu      sync.Mutex
	buckets map[string][]uint64 // outcome → counts per bound, then +Inf
	sums    map[string]float64
}

var runBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func newRunHistogram() *runHistogram {
	return &runHistogram{buckets: map[string][]uint64{}, sums: map[string]float64{}}
}

func (h *runHistogram) observe(outcome string, seconds float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.buckets[outcome]
	if b == nil {
		b = make([]uint64, len(runBounds)+1)
		h.buckets[outcome] = b
	}
	i := sort.SearchFloat64s(runBounds, seconds)
	b[i]++
	h.sums[outcome] += seconds
}

// write writes the histogram, labelled with the function.
func (h *runHistogram) write(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.buckets) == 0 {
		return
	}
	fn := os.Getenv("FUNC_NAME")
	const name = "funcserver_run_seconds"
	fmt.Fprintf(w, "# HELP %s Runs of the function as the metrics plugin measured them.\n# TYPE %s histogram\n", name, name)
	for _, outcome := range []string{"ok", "error"} {
		b, ok := h.buckets[outcome]
		if !ok {
			continue
		}
		labels := fmt.Sprintf("function=%q,outcome=%q", fn, outcome)
		var cum uint64
		for i, bound := range runBounds {
			cum += b[i]
			fmt.Fprintf(w, "%s_bucket{%s,le=\"%g\"} %d\n", name, labels, bound, cum)
		}
		cum += b[len(runBounds)]
		fmt.Fprintf(w, "%s_bucket{%s,le=\"+Inf\"} %d\n%s_sum{%s} %g\n%s_count{%s} %d\n", name, labels, cum, name, labels, h.sums[outcome], name, labels, cum)
	}
}
