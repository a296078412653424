package function

import (
	"encoding/base64"
	"fmt"
	"strings"

	"minik8s/pkg/api"
)

// HeaderLog asks, on a synchronous call, for the call's logs with the
// answer (seed 003's log isolation): any value asks; the answer carries
// them in the same header, base64 (standard) of the text.
const HeaderLog = "X-Minik8s-Log"

// maxLogHeader bounds the logs an answer header carries (before base64);
// GET /api/funcs/ID has every step's whole output.
const maxLogHeader = 32 << 10

// CallLogs is what the steps of a call wrote, in order: each step's output
// under a line naming it when there are several, then the post plugins
// that failed after it (the call's outcome stands, so only this says so).
func CallLogs(steps []api.FuncStepRecord) string {
	var b strings.Builder
	for i, s := range steps {
		if len(steps) > 1 {
			fmt.Fprintf(&b, "--- step %d: %s ---\n", i+1, s.Function)
		}
		b.WriteString(s.Output)
		if s.Output != "" && !strings.HasSuffix(s.Output, "\n") {
			b.WriteByte('\n')
		}
		for _, e := range s.PluginErrors {
			fmt.Fprintf(&b, "[post plugin failed: %s]\n", e)
		}
	}
	return b.String()
}

// LogHeader is the value of HeaderLog in an answer.
func LogHeader(steps []api.FuncStepRecord) string {
	logs := CallLogs(steps)
	if len(logs) > maxLogHeader {
		logs = logs[:maxLogHeader] + fmt.Sprintf("\n[logs cut: %d bytes more in GET /api/funcs/ID]\n", len(logs)-maxLogHeader)
	}
	return base64.StdEncoding.EncodeToString([]byte(logs))
}
