package funcserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"minik8s/pkg/function"
)

// callInput is what a worker gets for one call: the argument, and for a
// function taking run(event, context) the event's metadata and the
// call's context, from the request's headers (pkg/function's contract).
type callInput struct {
	arg            string
	event, context json.RawMessage
	// send delivers a send the call makes, by deadline, and says why it
	// was not ("": delivered); nil: the call's sends go in its answer.
	send func(s function.Send, deadline time.Time) string
}

func (s *server) callInput(r *http.Request, body []byte) (callInput, error) {
	in := callInput{arg: string(body)}
	if v := r.Header.Get(function.HeaderEvent); v != "" {
		if !json.Valid([]byte(v)) || !strings.HasPrefix(v, "{") {
			return in, fmt.Errorf("header %s: not a JSON object", function.HeaderEvent)
		}
		in.event = json.RawMessage(v)
	}
	fn := s.fn.Load()
	cc := function.CallContext{FunctionName: fn.name, Timeout: int(fn.timeout.Seconds())}
	if v := r.Header.Get(function.HeaderContext); v != "" {
		if s.memoryLimit == "" && json.Valid([]byte(v)) && strings.HasPrefix(v, "{") {
			// Nothing to fill in: passed on as it came (every call).
			in.context = json.RawMessage(v)
			return in, nil
		}
		if err := json.Unmarshal([]byte(v), &cc); err != nil {
			return in, fmt.Errorf("header %s: %v", function.HeaderContext, err)
		}
	}
	if cc.MemoryLimit == "" {
		cc.MemoryLimit = s.memoryLimit
	}
	if cc.Config == nil {
		cc.Config = map[string]string{}
	}
	b, err := json.Marshal(cc)
	if err != nil {
		return in, err
	}
	in.context = b
	return in, nil
}

// memoryLimit is the memory limit of the container in bytes, "" when
// there is none: as the pod says it (function.EnvMemoryLimit), else as the
// cgroup does when it is in view (cgroup v2's memory.max, or v1's
// limit_in_bytes).
func memoryLimit() string {
	if v := os.Getenv(function.EnvMemoryLimit); v != "" {
		return v
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v := strings.TrimSpace(string(b)); v != "max" {
			return v
		}
		return ""
	}
	b, err := os.ReadFile("/sys/fs/cgroup/memory/memory.limit_in_bytes")
	if err != nil {
		return ""
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	// v1 says "no limit" with a number near the largest page-aligned int64.
	if err != nil || n >= 1<<62 {
		return ""
	}
	return strconv.FormatUint(n, 10)
}
