package metrics

import (
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	c := NewCounter("calls_total", "Calls.", "function", "outcome")
	c.Add(1, "f", "ok")
	c.Add(2, "f", "ok")
	c.Add(1, `g"x`, "failed")
	h := NewHistogram("call_seconds", "Durations.", []float64{0.1, 1}, "function")
	h.Observe(0.05, "f")
	h.Observe(0.5, "f")
	h.Observe(5, "f")
	var b strings.Builder
	c.Write(&b)
	h.Write(&b)
	NewGauge("unused", "Never set.").Write(&b)
	want := `# HELP calls_total Calls.
# TYPE calls_total counter
calls_total{function="f",outcome="ok"} 3
calls_total{function="g\"x",outcome="failed"} 1
# HELP call_seconds Durations.
# TYPE call_seconds histogram
call_seconds_bucket{function="f",le="0.1"} 1
call_seconds_bucket{function="f",le="1"} 2
call_seconds_bucket{function="f",le="+Inf"} 3
call_seconds_sum{function="f"} 5.55
call_seconds_count{function="f"} 3
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
