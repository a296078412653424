package funcrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
	"minik8s/pkg/tracing"
	"minik8s/pkg/wait"
)

// stepper runs single steps of instances: it finds the step's function,
// runs the call on one of its pods (v2) or in a pod made for the step (v1)
// and says what the instance becomes. It writes nothing about instances:
// the runner stores what advance returns.
type stepper struct {
	cfg   Config
	c     *client.Client
	funcs *cache.Lister[api.Func, *api.Func]
	// revs are the functions' revisions (nil: read from the apiserver).
	revs   *cache.Lister[api.FuncRevision, *api.FuncRevision]
	hashes specHashes
	pods   *cache.Lister[api.Pod, *api.Pod]
	http   *http.Client
	demand *demand
	pool   *pool
	// warm claims warm generic pods for cold calls (nil: none).
	warm *warm
	// changes wakes the v1 steps that wait for their pod.
	changes *wait.Notifier
	// exporter sends the spans of calls (nil: kept with the instance only).
	exporter *tracing.Exporter
	metrics  *callMetrics
	// outputs delivers what steps send (nil: sends are recorded undelivered).
	outputs *outputs
}

func newStepper(cfg Config, c *client.Client, funcs *cache.Informer[api.Func, *api.Func], pods *cache.Informer[api.Pod, *api.Pod], eps *cache.Informer[api.Endpoints, *api.Endpoints], d *demand) *stepper {
	cfg.setDefaults()
	s := &stepper{
		cfg:     cfg,
		c:       c,
		funcs:   funcs.Lister(),
		pods:    pods.Lister(),
		http:    newPodClient(),
		demand:  d,
		changes: wait.NewNotifier(),
		metrics: newCallMetrics(),
	}
	s.pool = newPool(s, eps.Lister())
	s.warm = newWarm(s, c)
	s.watch(funcs, pods, eps)
	return s
}

// watch wakes the waiting steps a change may concern: those of the
// function whose Endpoints, pods or template changed, and the v1 step
// waiting for that very pod.
func (s *stepper) watch(funcs *cache.Informer[api.Func, *api.Func], pods *cache.Informer[api.Pod, *api.Pod], eps *cache.Informer[api.Endpoints, *api.Endpoints]) {
	onEps := func(ep *api.Endpoints) {
		key := ep.Namespace + "/" + ep.Name
		s.pool.forgetDrops(key)
		s.pool.wakeFirst(key)
	}
	eps.AddEventHandler(cache.Handler[*api.Endpoints]{
		OnAdd: onEps, OnUpdate: func(_, cur *api.Endpoints) { onEps(cur) }, OnDelete: onEps,
	})
	onPod := func(p *api.Pod) {
		if fn := p.Labels[function.LabelFunc]; fn != "" {
			s.pool.wakeFirst(p.Namespace + "/" + function.ObjectName(fn))
		}
		if fn := p.Labels[function.LabelRevisionOf]; fn != "" {
			s.pool.wakeFirst(p.Namespace + "/" + function.ObjectName(fn+function.RevisionSep+p.Labels[function.LabelRevision]))
		}
		s.changes.Wake(podKey(p.Namespace, p.Name))
	}
	pods.AddEventHandler(cache.Handler[*api.Pod]{
		OnAdd: onPod, OnUpdate: func(_, cur *api.Pod) { onPod(cur) }, OnDelete: onPod,
	})
	onFunc := func(f *api.Func) { s.pool.wakeFirst(f.Namespace + "/" + function.ObjectName(f.Name)) }
	funcs.AddEventHandler(cache.Handler[*api.Func]{
		OnAdd: onFunc, OnUpdate: func(_, cur *api.Func) { onFunc(cur) }, OnDelete: onFunc,
	})
}

// stepTarget says where a step ran, and when it waited for a pod (a cold
// start, or all pods busy).
type stepTarget struct {
	pod, node          string
	waitStart, waitEnd time.Time
	// lost are the pods lost under the step before the one that
	// answered, and why: the step ran again.
	lost []string
}

// maxLostPods bounds the pods a step is run again after: a call that
// kills every pod it runs in fails.
const maxLostPods = 3

// advance runs inst.Status.Next and returns the instance as it must be
// stored next: a deep copy of inst with the step's record appended and
// Hops+1 and Next moved on, or ended (Succeeded with Result, or Failed with
// Error, CompletionTime set, Next nil). It writes nothing about the
// instance. err != nil only when ctx ended before the outcome was known.
func (s *stepper) advance(ctx context.Context, inst *api.FuncInstance) (*api.FuncInstance, error) {
	traceID, root, parent := tracing.Root(inst)
	out, err := s.step(ctx, inst, traceID, root)
	if out != nil && call.Terminal(out) {
		// The call's own span, once it ended.
		start := callStart(inst)
		sp := api.FuncSpan{Name: "call " + inst.Spec.Function, Service: "funcrunner", TraceID: traceID, SpanID: root,
			ParentSpanID: parent, StartNs: start.UnixNano(), EndNs: out.Status.CompletionTime.UnixNano(), Error: out.Status.Error}
		call.AddSpans(out, sp)
		s.exporter.Add(sp)
	}
	return out, err
}

// step runs inst.Status.Next, as advance says, but for the call's span;
// the step's span goes under root, in trace traceID.
func (s *stepper) step(ctx context.Context, inst *api.FuncInstance, traceID, root string) (*api.FuncInstance, error) {
	cur := inst.Status.Next
	if cur == nil {
		return ended(inst, nil, "", "instance has no next step"), nil
	}
	if cur.Function == api.FuncReturn {
		return ended(inst, nil, string(cur.Arg), ""), nil
	}
	if inst.Status.Hops >= s.cfg.HopLimit {
		return ended(inst, nil, "", fmt.Sprintf("hop limit of %d reached before RETURN (the chain loops?): next was %q", s.cfg.HopLimit, cur.Function)), nil
	}
	ns := inst.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	f, err := s.lookupFunc(ctx, ns, cur.Function)
	if err != nil {
		return nil, err
	}
	if f == nil {
		msg := fmt.Sprintf("function %q not found", cur.Function)
		if n := len(inst.Status.Steps); n > 0 {
			msg += fmt.Sprintf(" (called by %q)", inst.Status.Steps[n-1].Function)
		}
		return ended(inst, nil, "", msg), nil
	}
	start := time.Now().UTC()
	s.metrics.started(ns, f.Name)
	stepSpan := tracing.NewSpanID()
	r, err := s.run(ctx, inst, f, cur, tracing.Format(traceID, stepSpan))
	var bad *targetError
	if errors.As(err, &bad) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return ended(inst, nil, "", fmt.Sprintf("function %q: %v", f.Name, bad.err)), nil
	}
	base := f
	f, res, tgt := r.f, r.res, r.tgt
	rec := api.FuncStepRecord{Function: base.Name, Revision: r.rev, Arg: truncate(cur.Arg), Start: &start}
	end := time.Now().UTC()
	rec.DurationMs = end.Sub(start).Milliseconds()
	rec.Pod, rec.Node, rec.Retried = tgt.pod, tgt.node, tgt.lost
	failed := err != nil || (res != nil && res.Error != nil)
	s.metrics.ended(ns, base.Name, failed, !tgt.waitStart.IsZero(), end.Sub(start))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var out *api.FuncInstance
	// What was delivered while it ran stands, whatever the outcome.
	rec.Sends = r.streamed
	if err != nil {
		rec.Error = err.Error()
		out = ended(inst, &rec, "", fmt.Sprintf("function %q: %v", f.Name, err))
	} else {
		if res.Error == nil && len(res.Sends) > 0 {
			// A runtime that hands its sends over after the run.
			rec.Sends = append(rec.Sends, s.deliver(ctx, inst, f, res.Sends)...)
		}
		out = s.outcome(inst, f, &rec, res)
	}
	spans := []api.FuncSpan{{Name: fmt.Sprintf("step %d: %s", inst.Status.Hops+1, f.Name), Service: "funcrunner", TraceID: traceID,
		SpanID: stepSpan, ParentSpanID: root, StartNs: start.UnixNano(), EndNs: end.UnixNano(), Error: rec.Error}}
	if !tgt.waitStart.IsZero() {
		spans = append(spans, tracing.Span("wait for a pod of "+f.Name, "funcrunner", traceID, stepSpan, tgt.waitStart, tgt.waitEnd))
	}
	if res != nil && len(res.Spans) > 0 {
		var pod []api.FuncSpan
		if err := json.Unmarshal(res.Spans, &pod); err != nil {
			// The call's answer stands; only the pod's part of its trace is lost.
			log.WithError(err).WithFields(log.Fields{"function": f.Name, "pod": rec.Pod}).Warn("the pod's spans do not decode; dropped")
		}
		for _, sp := range pod {
			sp.Service = "pod"
			spans = append(spans, sp)
		}
	}
	call.AddSpans(out, spans...)
	s.exporter.Add(spans...)
	return out, nil
}

// deliver sends what the step of inst sent, once its run returned.
func (s *stepper) deliver(ctx context.Context, inst *api.FuncInstance, f *api.Func, sends []function.Send) []api.FuncSendRecord {
	if s.outputs == nil {
		recs := make([]api.FuncSendRecord, len(sends))
		for i, snd := range sends {
			recs[i] = api.FuncSendRecord{Output: snd.Output, Bytes: len(snd.Data), Error: "this runner delivers no outputs"}
		}
		return recs
	}
	return s.outputs.deliver(ctx, inst, f, inst.Status.Hops+1, sends)
}

// deliverOne delivers a send of the step of inst running now, as it is
// made.
func (s *stepper) deliverOne(ctx context.Context, inst *api.FuncInstance, f *api.Func, seq int, snd function.Send) api.FuncSendRecord {
	if s.outputs == nil {
		return api.FuncSendRecord{Output: snd.Output, Bytes: len(snd.Data), Error: "this runner delivers no outputs"}
	}
	return s.outputs.deliverOne(ctx, inst, f, inst.Status.Hops+1, seq, snd)
}

// outcome is the instance after a step that got the runtime's answer.
func (s *stepper) outcome(inst *api.FuncInstance, f *api.Func, rec *api.FuncStepRecord, res *function.Result) *api.FuncInstance {
	rec.RunMs = res.DurationMs
	rec.Output = recordOutput(inst, res)
	rec.PluginErrors = res.PluginErrors
	if res.Pod != "" && rec.Pod == "" {
		rec.Pod = res.Pod
	}
	if res.Error != nil {
		rec.Error = res.Error.String()
		if res.Error.Trace != "" {
			rec.Error += "\n" + truncate(res.Error.Trace)
		}
		msg := fmt.Sprintf("function %q failed: %s", f.Name, res.Error.String())
		return call.End(inst, rec, "", &api.FuncError{Message: msg, Type: res.Error.Type, Trace: truncate(res.Error.Trace)})
	}
	rec.Result = truncate(res.Result)
	if res.HasCheck {
		rec.Check = res.Check
	}
	nextFn := f.Spec.Left
	if res.HasCheck && (res.Check == nil || !*res.Check) {
		nextFn = f.Spec.Right
	}
	if nextFn == "" {
		nextFn = api.FuncReturn
	}
	if len(res.Result) > call.MaxArgBytes {
		return ended(inst, rec, "", fmt.Sprintf("function %q returned %d bytes, more than the limit of %d", f.Name, len(res.Result), call.MaxArgBytes))
	}
	if nextFn == api.FuncReturn {
		// The last step and the result are stored in one write.
		out := ended(inst, rec, string(res.Result), "")
		call.TypeResult(out, res.ResultType)
		return out
	}
	return call.Then(inst, rec, nextFn, string(res.Result))
}

// lookupFunc returns the function, or nil when it does not exist. The
// cache may lag a function just created, so a miss is confirmed with the
// apiserver, retried until ctx ends while the apiserver cannot answer.
func (s *stepper) lookupFunc(ctx context.Context, ns, name string) (*api.Func, error) {
	if f, ok := s.funcs.Get(ns, name); ok {
		return f, nil
	}
	backoff := 100 * time.Millisecond
	for {
		f, err := s.c.Funcs(ns).Get(ctx, name)
		switch {
		case err == nil:
			return f, nil
		case errdefs.IsNotFound(err):
			return nil, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		log.WithError(err).WithFields(log.Fields{"namespace": ns, "function": name}).Warn("function runner: reading a function failed, retrying")
		if !wait.Sleep(ctx, backoff) {
			return nil, ctx.Err()
		}
		backoff = min(2*backoff, 5*time.Second)
		if f, ok := s.funcs.Get(ns, name); ok {
			return f, nil
		}
	}
}

func truncate[S ~string](s S) S {
	if len(s) <= maxRecordBytes {
		return s
	}
	n := maxRecordBytes
	if utf8.ValidString(string(s)) {
		// Text stays text: the cut falls between characters.
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
	}
	return s[:n] + S(fmt.Sprintf("… (%d bytes cut)", len(s)-n))
}

// recordOutput is a step's output as its record keeps it: at most
// maxOutputBytes, and no more than the record's output budget leaves,
// every cut (the runtime's own included) counted in one note at its end.
func recordOutput(inst *api.FuncInstance, res *function.Result) string {
	kept := 0
	for _, st := range inst.Status.Steps {
		kept += len(st.Output)
	}
	room := max(min(maxOutputBytes, maxRecordOutputBytes-kept), 0)
	body, dropped := res.Output, res.OutputDropped
	if dropped > 0 {
		body = strings.TrimSuffix(body, function.OutputNote(dropped))
	}
	if len(body) <= room {
		if dropped == 0 {
			return body
		}
		return body + function.OutputNote(dropped)
	}
	keep := room
	for keep > 0 && !utf8.RuneStart(body[keep]) {
		keep--
	}
	return body[:keep] + function.OutputNote(dropped+int64(len(body)-keep))
}

// callStart is when a call began, as precisely as it is known: its
// event's time (the gateway, the function API and schedules set it to the
// nanosecond), else its first step's start, else its creation (seconds).
func callStart(inst *api.FuncInstance) time.Time {
	var start time.Time
	if inst.CreationTimestamp != nil {
		start = *inst.CreationTimestamp
	}
	if ev := inst.Spec.Event; ev != nil {
		if t, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil && !t.Before(start) && t.Before(time.Now()) {
			return t
		}
	}
	if len(inst.Status.Steps) > 0 && inst.Status.Steps[0].Start != nil {
		return *inst.Status.Steps[0].Start
	}
	if start.IsZero() {
		return time.Now()
	}
	return start
}

// ended is inst ended: Succeeded with result when errMsg == "", else
// Failed with the platform's errMsg; rec (may be nil) is appended first.
func ended(inst *api.FuncInstance, rec *api.FuncStepRecord, result, errMsg string) *api.FuncInstance {
	if errMsg != "" {
		return call.End(inst, rec, "", call.Failure(errMsg))
	}
	return call.End(inst, rec, result, nil)
}
