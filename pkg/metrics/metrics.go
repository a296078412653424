// Package metrics keeps counters, gauges and histograms by label values
// and writes them in Prometheus' text format: the few kinds /metrics of the
// components need, without a client library.
package metrics

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// Vec is one metric family with labels: a counter, a gauge or a histogram.
type Vec struct {
	name, help, kind string
	labels           []string
	bounds           []float64 // histogram only

	mu     sync.Mutex
	values map[string]*series
}

type series struct {
	labels []string
	value  float64  // counter, gauge; histogram: sum
	counts []uint64 // histogram: per bound, then +Inf
}

func newVec(kind, name, help string, bounds []float64, labels ...string) *Vec {
	return &Vec{name: name, help: help, kind: kind, labels: labels, bounds: bounds, values: map[string]*series{}}
}

func NewCounter(name, help string, labels ...string) *Vec {
	return newVec("counter", name, help, nil, labels...)
}
func NewGauge(name, help string, labels ...string) *Vec {
	return newVec("gauge", name, help, nil, labels...)
}

// NewHistogram makes a histogram with bucket upper bounds (sorted).
func NewHistogram(name, help string, bounds []float64, labels ...string) *Vec {
	return newVec("histogram", name, help, bounds, labels...)
}

// DurationBounds are bucket bounds in seconds from a millisecond to a minute.
var DurationBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func (v *Vec) get(values []string) *series {
	key := strings.Join(values, "\x00")
	s := v.values[key]
	if s == nil {
		s = &series{labels: append([]string(nil), values...)}
		if v.kind == "histogram" {
			s.counts = make([]uint64, len(v.bounds)+1)
		}
		v.values[key] = s
	}
	return s
}

// Add adds d to a counter or a gauge.
func (v *Vec) Add(d float64, values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.get(values).value += d
}

// Set sets a gauge.
func (v *Vec) Set(x float64, values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.get(values).value = x
}

// Observe records x in a histogram.
func (v *Vec) Observe(x float64, values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.get(values)
	s.counts[sort.SearchFloat64s(v.bounds, x)]++
	s.value += x
}

// Write writes the family in the text format; nothing without series.
func (v *Vec) Write(w io.Writer) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.values) == 0 {
		return
	}
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", v.name, v.help, v.name, v.kind)
	keys := make([]string, 0, len(v.values))
	for k := range v.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := v.values[k]
		labels := v.labelText(s.labels)
		if v.kind != "histogram" {
			fmt.Fprintf(w, "%s%s %g\n", v.name, braces(labels), s.value)
			continue
		}
		var cum uint64
		for i, b := range v.bounds {
			cum += s.counts[i]
			fmt.Fprintf(w, "%s_bucket%s %d\n", v.name, braces(join(labels, fmt.Sprintf("le=%q", fmt.Sprint(b)))), cum)
		}
		cum += s.counts[len(v.bounds)]
		fmt.Fprintf(w, "%s_bucket%s %d\n%s_sum%s %g\n%s_count%s %d\n", v.name, braces(join(labels, `le="+Inf"`)), cum,
			v.name, braces(labels), s.value, v.name, braces(labels), cum)
	}
}

func (v *Vec) labelText(values []string) string {
	parts := make([]string, len(v.labels))
	for i, l := range v.labels {
		parts[i] = fmt.Sprintf("%s=%q", l, values[i])
	}
	return strings.Join(parts, ",")
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func braces(s string) string {
	if s == "" {
		return ""
	}
	return "{" + s + "}"
}
