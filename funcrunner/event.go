package funcrunner

import (
	"maps"
	"net/http"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/pkg/tracing"
)

// stepCall is what one step sends a pod: the argument, and the call's
// event and context in headers (pkg/function's contract).
type stepCall struct {
	arg    string
	header http.Header
	// send delivers a send the call makes while it runs, and records it
	// (nil: the function has no outputs).
	send func(seq int, s function.Send) api.FuncSendRecord
}

// newStepCall is the call of f, a step of inst, with arg. Every step of a
// chain carries the event that started the chain.
func newStepCall(inst *api.FuncInstance, f *api.Func, arg, traceparent string) stepCall {
	ev := inst.Spec.Event
	if ev == nil {
		// Calls recorded before events were: a plain call of the API.
		ev = &api.FuncEvent{SpecVersion: "1.0", ID: inst.Name, Source: "/api/funcs/" + inst.Spec.Function, Type: function.EventTypeCall}
	}
	cc := &function.CallContext{
		FunctionName: function.BaseName(f.Name),
		Namespace:    funcNamespace(f),
		Runtime:      function.Runtime(&f.Spec),
		Timeout:      function.TimeoutSeconds(&f.Spec),
		InstanceID:   inst.Name,
		Step:         inst.Status.Hops + 1,
		Traceparent:  traceparent,
		// The function's own config, under its trigger's (and app's).
		Config: maps.Clone(f.Spec.Config),
	}
	if cc.Config == nil {
		cc.Config = map[string]string{}
	}
	if f.Spec.Image != "" {
		cc.Runtime = f.Spec.Image
	}
	for _, o := range f.Spec.Outputs {
		cc.Outputs = append(cc.Outputs, o.Name)
	}
	if t := inst.Spec.Trigger; t != nil {
		cc.Trigger = t.Type + "/" + t.Name
		cc.Schedule = t.Schedule
		maps.Copy(cc.Config, t.Config)
	}
	h := http.Header{}
	function.SetEventHeaders(h, ev, cc)
	h.Set(tracing.Header, traceparent)
	return stepCall{arg: arg, header: h}
}
