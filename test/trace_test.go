package test

import (
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"minik8s/apiserver"
	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/framework"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it keeps the
// spans it is sent.
type otlpReceiver struct {
	URL   string
	mu    sync.Mutex
	spans []api.FuncSpan
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{URL: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.GetResourceSpans() {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					r.spans = append(r.spans, api.FuncSpan{Name: s.GetName(), Service: service,
						TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
						ParentSpanID: hex.EncodeToString(s.GetParentSpanId()),
						StartNs:      int64(s.GetStartTimeUnixNano()), EndNs: int64(s.GetEndTimeUnixNano())})
				}
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *otlpReceiver) trace(traceID string) []api.FuncSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []api.FuncSpan
	for _, s := range r.spans {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// TestTraceOfAChain: a 3-step chain called with a traceparent is one
// trace under the caller's span, sent to an OTLP receiver and kept with
// the instance: the call's span, a span per step under it, and the run in
// each pod (the tracing plugin) under its step's span and inside it.
func TestTraceOfAChain(t *testing.T) {
	rcv := startOTLPReceiver(t)
	t.Setenv("FUNC_PLUGINS_PRE", "tracing")
	t.Setenv("FUNC_PLUGINS_POST", "tracing")
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) { c.OTLPEndpoint = rcv.URL })
	framework.StartFuncRunnerWith(t, s, func(c *funcrunner.Config) { c.OTLPEndpoint = rcv.URL })
	for _, step := range []struct{ name, next string }{{"ta", "tb"}, {"tb", "tc"}, {"tc", "RETURN"}} {
		code := "def run(arg):\n    return arg + '>" + step.name + "'\n"
		funcTemplate(t, s, step.name, code, step.next, step.next, nil)
		publish(t, s, step.name, runtime(t, code))
	}
	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", s.URL+"/api/funcs/ta?wait=30s", strings.NewReader("go"))
	req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("call: %s", resp.Status)
	}
	var spans []api.FuncSpan
	waitUntil(t, 30*time.Second, "the chain's spans at the receiver", func() bool {
		spans = rcv.trace(traceID)
		return len(spans) >= 8
	})
	byName := map[string]api.FuncSpan{}
	for _, sp := range spans {
		byName[sp.Name] = sp
	}
	api0, ok := byName["POST /api/funcs/ta"]
	if !ok || api0.ParentSpanID != callerSpan || api0.Service != "minik8s-apiserver" {
		t.Fatalf("the apiserver's span %+v (spans %+v)", api0, spans)
	}
	call, ok := byName["call ta"]
	if !ok || call.ParentSpanID != api0.SpanID || call.Service != "minik8s-funcrunner" {
		t.Fatalf("the call's span %+v, want it under the apiserver's %s (spans %+v)", call, api0.SpanID, spans)
	}
	for i, fn := range []string{"ta", "tb", "tc"} {
		step, ok := byName["step "+string(rune('1'+i))+": "+fn]
		if !ok || step.ParentSpanID != call.SpanID {
			t.Errorf("step %d: %+v, want it under the call's span %s", i+1, step, call.SpanID)
			continue
		}
		run, ok := byName["run "+fn]
		if !ok || run.ParentSpanID != step.SpanID || run.Service != "minik8s-pod" {
			t.Errorf("run of %s: %+v, want it under step span %s", fn, run, step.SpanID)
			continue
		}
		if run.StartNs < step.StartNs || run.EndNs > step.EndNs {
			t.Errorf("run of %s [%d, %d] is not inside its step [%d, %d]", fn, run.StartNs, run.EndNs, step.StartNs, step.EndNs)
		}
	}
	// The runner's /metrics counts the calls per function.
	leases, _, err := s.Client.Leases(function.RunnerNamespace).List(req.Context(), client.ListOptions{})
	if err != nil || len(leases) == 0 {
		t.Fatalf("runner leases: %v", err)
	}
	mresp, err := http.Get(leases[0].Annotations[function.AnnotationRunnerURL] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mbody, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`minik8s_function_calls_total{namespace="default",function="tb",outcome="succeeded"} 1`,
		`minik8s_function_call_duration_seconds_count{namespace="default",function="tc"} 1`,
		`minik8s_function_in_flight{namespace="default",function="ta"} 0`} {
		if !strings.Contains(string(mbody), want) {
			t.Errorf("the runner's /metrics lacks %s:\n%s", want, mbody)
		}
	}

	// The same spans are kept with the instance; mkctl draws them.
	var id string
	waitUntil(t, 10*time.Second, "the instance's trace", func() bool {
		list, _, err := s.Client.FuncInstances("default").List(req.Context(), client.ListOptions{})
		if err != nil {
			return false
		}
		for _, inst := range list {
			if inst.Spec.Function == "ta" && len(inst.Status.Trace) >= 8 {
				id = inst.Name
				return true
			}
		}
		return false
	})
	out := mustMkctl(t, s, "func", "trace", id)
	for _, want := range []string{"Trace " + traceID, "POST /api/funcs/ta", "  call ta", "    step 2: tb", "      run tb", "pod", "█"} {
		if !strings.Contains(out, want) {
			t.Errorf("mkctl func trace lacks %q:\n%s", want, out)
		}
	}
}
