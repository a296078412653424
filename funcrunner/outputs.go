package funcrunner

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strconv"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
)

// publisher publishes on NATS subjects (the runner's queue connection).
type publisher interface {
	Publish(ctx context.Context, subject string, data []byte) error
}

// outputs delivers what a step sends through its function's outputs
// (minik8s.send), as the function sends it (or, from a runtime that does
// not stream its sends, once the step's run returned): a call of a function
// (stored claimed by this runner, a child of the sending call), a message
// on a subject, or a POST to a URL through the egress guard, as callbacks.
type outputs struct {
	client *client.Client
	self   string
	posts  *callbacks
	// nats is nil when the runner has no NATS.
	nats publisher
}

// deliver sends each of sends, a step (from 1) of inst running f, and
// records how each went.
func (o *outputs) deliver(ctx context.Context, inst *api.FuncInstance, f *api.Func, step int, sends []function.Send) []api.FuncSendRecord {
	recs := make([]api.FuncSendRecord, len(sends))
	for i, s := range sends {
		recs[i] = o.deliverOne(ctx, inst, f, step, i, s)
	}
	return recs
}

// deliverOne sends s, the send numbered i (from 0) of a step of inst
// running f, and records how it went.
func (o *outputs) deliverOne(ctx context.Context, inst *api.FuncInstance, f *api.Func, step, i int, s function.Send) api.FuncSendRecord {
	rec := api.FuncSendRecord{Output: s.Output, Bytes: len(s.Data)}
	out := findOutput(f, s.Output)
	var err error
	switch {
	case out == nil:
		err = fmt.Errorf("the function has no output %q (any more)", s.Output)
	case out.Function != "":
		rec.Instance, err = o.callChild(ctx, inst, f, step, i, out, s.Data)
	case out.Subject != "":
		if validation.SystemSubject(out.Subject) {
			// Refused when stored; this guards what the check missed.
			err = fmt.Errorf("subject %q is a NATS system subject", out.Subject)
		} else if o.nats == nil {
			err = fmt.Errorf("subject %q: the runner has no NATS (funcrunner --nats-url)", out.Subject)
		} else if err = o.nats.Publish(ctx, out.Subject, []byte(s.Data)); err != nil {
			err = fmt.Errorf("subject %q: %w", out.Subject, err)
		}
	default:
		err = o.post(ctx, inst, f, out, s.Data)
	}
	if err != nil {
		rec.Error = err.Error()
	}
	return rec
}

func findOutput(f *api.Func, name string) *api.FuncOutput {
	for i := range f.Spec.Outputs {
		if f.Spec.Outputs[i].Name == name {
			return &f.Spec.Outputs[i]
		}
	}
	return nil
}

// callChild stores the asynchronous call of out's function. Its id is
// the send's own (instance, step, index): a step run again (its runner
// died before recording it) finds its calls made, and makes none twice.
func (o *outputs) callChild(ctx context.Context, inst *api.FuncInstance, f *api.Func, step, i int, out *api.FuncOutput, data api.Bytes) (string, error) {
	id := childID(inst.Name, step, i)
	ev := &api.FuncEvent{SpecVersion: "1.0", ID: id, Source: "/api/funcs/" + f.Name + "/outputs/" + out.Name,
		Type: function.EventTypeOutput, Subject: inst.Name}
	req := function.CallRequest{Namespace: inst.Namespace, Function: out.Function, ID: id, Arg: []byte(data), Event: ev,
		Traceparent: inst.Spec.Traceparent}
	// The child is the caller's as the parent is: who may read one reads both.
	child := call.New(req, call.Origin{User: inst.Spec.User, Runner: o.self})
	child.Spec.Parent = &api.FuncParentRef{Instance: inst.Name, Step: step, Output: out.Name}
	if _, err := o.client.FuncInstances(inst.Namespace).Create(ctx, child); err != nil && !errdefs.IsAlreadyExists(err) {
		return "", fmt.Errorf("calling %q: %w", out.Function, err)
	}
	return id, nil
}

// childID is a UUID (version 8, RFC 9562) made of the send's identity.
func childID(parent string, step, i int) string {
	sum := sha256.Sum256([]byte(parent + "/" + strconv.Itoa(step) + "/" + strconv.Itoa(i)))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// post makes one POST of data to out's URL, under the callbacks' rules:
// the egress guard judges where it goes.
func (o *outputs) post(ctx context.Context, inst *api.FuncInstance, f *api.Func, out *api.FuncOutput, data api.Bytes) error {
	if err := o.posts.checkURL(out.URL); err != nil {
		return fmt.Errorf("url %q: %w", out.URL, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Call-Id", inst.Name)
	h.Set("X-Function-Name", f.Name)
	h.Set("X-Function-Output", out.Name)
	code, err := o.posts.post(ctx, out.URL, string(data), h)
	if err != nil {
		return fmt.Errorf("url %q: %w", out.URL, err)
	}
	if code < 200 || code > 299 {
		return fmt.Errorf("url %q answered %d", out.URL, code)
	}
	return nil
}
