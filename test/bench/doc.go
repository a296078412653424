// Package bench holds the benchmarks `make bench` runs: each starts real
// components (embedded etcd, and containerd where needed) and reports its
// figures with b.ReportMetric, so results are comparable run to run on one
// machine. Latencies are reported as percentiles in milliseconds.
package bench

import (
	"sort"
	"time"
)

// percentile returns the p-th percentile (0..100) of durations in ms.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p / 100)
	return float64(s[i]) / float64(time.Millisecond)
}
