package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"minik8s/test/framework"
)

// loggingCode prints and logs a line per call: what capture and the
// log-context plugin have to handle.
const loggingCode = `import logging
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
def run(arg):
    print("got", arg)
    logging.info("handled %s", arg)
    return arg
`

// BenchmarkFuncPluginsAndLogCapture measures, side by side in one run, a
// warm synchronous call (apiserver, runner in its process, pod) of the
// same function served three ways: output left to the pod log
// (FUNC_LOG_CAPTURE=off), output captured per call (the default), and
// captured with the tracing and log-context plugins on. The variants take
// turns in runs of warmRun calls, so all see the same machine over the
// run, and each is measured warm: a call right after one to the same pod,
// as a function's calls come under load. (Turns of one call each measure
// every call with caches the other variants' pods just evicted, which
// multiplies the cost of any Python the call runs several times over.)
func BenchmarkFuncPluginsAndLogCapture(b *testing.B) {
	const warmRun = 20
	s := startWarm(b)
	variants := []struct {
		fn  string
		env []string
	}{
		{"nocapture", []string{"FUNC_LOG_CAPTURE=off"}},
		{"capture", nil},
		{"plugins", []string{"FUNC_PLUGINS_PRE=tracing,log-context", "FUNC_PLUGINS_POST=tracing"}},
		{"logctx", []string{"FUNC_PLUGINS_PRE=log-context"}},
		{"tracing", []string{"FUNC_PLUGINS_PRE=tracing", "FUNC_PLUGINS_POST=tracing"}},
	}
	ports := make([]int32, len(variants))
	for i, v := range variants {
		port := framework.StartFuncServerEnv(b, loggingCode, 4, v.env...)
		ports[i] = port
		publishFunc(b, s, v.fn, loggingCode, "RETURN", "", port)
		out := syncCall(b, s, v.fn, "warm-up")
		if want := v.fn != "nocapture"; strings.Contains(out.Steps[0].Output, "got warm-up") != want {
			b.Fatalf("%s: output %q", v.fn, out.Steps[0].Output)
		}
	}
	if out := syncCall(b, s, "plugins", "x"); !strings.Contains(out.Steps[0].Output, "step 1] handled x") {
		b.Fatalf("log-context did not name the instance: %q", out.Steps[0].Output)
	}
	lat := make([][]time.Duration, len(variants))
	b.ResetTimer()
	for i := 0; i < b.N; i += warmRun {
		for j, v := range variants {
			for k := i; k < min(i+warmRun, b.N); k++ {
				t0 := time.Now()
				syncCall(b, s, v.fn, fmt.Sprint(k))
				lat[j] = append(lat[j], time.Since(t0))
			}
		}
	}
	// The same at the pod alone, no apiserver and runner around it.
	podLat := make([][]time.Duration, len(variants))
	for i := 0; i < b.N; i += warmRun {
		for j := range variants {
			for k := i; k < min(i+warmRun, b.N); k++ {
				t0 := time.Now()
				post(b, fmt.Sprintf("http://127.0.0.1:%d/invoke", ports[j]), fmt.Sprint(k))
				podLat[j] = append(podLat[j], time.Since(t0))
			}
		}
	}
	b.StopTimer()
	for j, v := range variants {
		b.ReportMetric(percentile(podLat[j], 50), v.fn+"-pod-p50-ms")
	}
	p := make([]float64, len(variants))
	for j, v := range variants {
		p[j] = percentile(lat[j], 50)
		b.ReportMetric(p[j], v.fn+"-p50-ms")
	}
	b.ReportMetric(p[1]-p[0], "capture-added-ms")
	b.ReportMetric(p[2]/p[1], "plugins-p50-ratio")
}
