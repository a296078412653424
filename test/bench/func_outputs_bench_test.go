package bench

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// BenchmarkFuncOutputHop measures how soon a call sent through an output
// starts: from the end of the sending step (its span's end, the pod's
// answer) to the start of the child call's first step, side by side with
// the same gap between the two steps of a chain (left). Issue 29 asks for
// 2 ms at p50.
func BenchmarkFuncOutputHop(b *testing.B) {
	s := startWarm(b)
	echo := "def run(arg):\n    return arg\n"
	sender := "import minik8s\n\ndef run(arg):\n    minik8s.send('next', arg)\n    return arg\n"
	warmFunc(b, s, "sink", echo, "RETURN", "RETURN")
	warmFunc(b, s, "chained", echo, "sink", "sink")
	port := startRuntime(b, sender)
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: "sender"},
		Spec: api.FuncSpec{Name: "sender", Function: base64.StdEncoding.EncodeToString([]byte(sender)), Left: "RETURN",
			Outputs: []api.FuncOutput{{Name: "next", Function: "sink"}}}}
	if _, err := s.Client.Funcs("default").Create(context.Background(), f); err != nil {
		b.Fatal(err)
	}
	s.PublishFunctionPods(b, "sender", port)
	syncCall(b, s, "sender", "warm")
	syncCall(b, s, "chained", "warm")

	var output, chain []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := syncCall(b, s, "sender", "x")
		if len(v.Steps) != 1 || len(v.Steps[0].Sends) != 1 || v.Steps[0].Sends[0].Instance == "" {
			b.Fatalf("sender: %+v", v)
		}
		parent := traceOf(b, s, v.InstanceID)
		child := traceOf(b, s, v.Steps[0].Sends[0].Instance)
		output = append(output, time.Duration(spanStart(b, child, "step 1: sink")-spanEnd(b, parent, "step 1: sender")))
		c := traceOf(b, s, syncCall(b, s, "chained", "x").InstanceID)
		chain = append(chain, time.Duration(spanStart(b, c, "step 2: sink")-spanEnd(b, c, "step 1: chained")))
	}
	b.StopTimer()
	op, cp := percentile(output, 50), percentile(chain, 50)
	b.ReportMetric(op, "output-start-p50-ms")
	b.ReportMetric(percentile(output, 99), "output-start-p99-ms")
	b.ReportMetric(cp, "chain-next-step-p50-ms")
	if cp > 0 {
		b.ReportMetric(op/cp, "output/chain-p50-ratio")
	}
}

// traceOf waits for the call id to end and returns its spans.
func traceOf(b *testing.B, s *framework.APIServer, id string) []api.FuncSpan {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client.FuncCalls("default").Wait(ctx, id); err != nil {
		b.Fatalf("waiting for %s: %v", id, err)
	}
	for {
		inst, err := s.Client.FuncInstances("default").Get(ctx, id)
		if err == nil {
			return inst.Status.Trace
		}
		if ctx.Err() != nil {
			b.Fatalf("the record of %s: %v", id, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func findSpan(b *testing.B, spans []api.FuncSpan, name string) api.FuncSpan {
	for _, sp := range spans {
		if strings.HasPrefix(sp.Name, name) {
			return sp
		}
	}
	b.Fatalf("no span %q in %+v", name, spans)
	return api.FuncSpan{}
}

func spanStart(b *testing.B, spans []api.FuncSpan, name string) int64 {
	return findSpan(b, spans, name).StartNs
}
func spanEnd(b *testing.B, spans []api.FuncSpan, name string) int64 {
	return findSpan(b, spans, name).EndNs
}
