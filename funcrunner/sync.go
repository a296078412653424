package funcrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
	"minik8s/pkg/tracing"
)

// syncCalls serves the synchronous calls the apiserver hands over: the
// chain runs in memory, nothing is stored per step, and the answer is the
// instance as it ended. When the caller's wait runs out first, the answer
// is the instance as it stands, claimed by this runner; the apiserver
// stores it and this runner goes on driving it as an asynchronous call.
type syncCalls struct {
	self      string
	stepper   *stepper
	instances *instances
	ctx       context.Context
}

// handoffLookup bounds how long a handed-over instance is looked for in the
// store before its driver gives up (the apiserver stores it right after
// the answer; not finding it means the apiserver failed the call).
const handoffLookup = 10 * time.Second

func (sc *syncCalls) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		function.WriteError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("method %s is not allowed", req.Method))
		return
	}
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, function.RunnerCallPath+"/"), "/")
	id := req.URL.Query().Get("id")
	wait, err := time.ParseDuration(req.URL.Query().Get("wait"))
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" || id == "" || err != nil || wait <= 0 {
		function.WriteError(w, http.StatusBadRequest, "BadRequest", "want POST "+function.RunnerCallPath+"/NAMESPACE/FUNCTION?id=ID&wait=DURATION")
		return
	}
	arg, err := io.ReadAll(io.LimitReader(req.Body, call.MaxArgBytes+1))
	if err != nil {
		function.WriteError(w, http.StatusBadRequest, "BadRequest", "reading the argument: "+err.Error())
		return
	}
	if len(arg) > call.MaxArgBytes {
		function.WriteError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
			fmt.Sprintf("argument of more than %d bytes is larger than the limit of %d", call.MaxArgBytes, call.MaxArgBytes))
		return
	}
	ev, err := function.ReadHandoffEvent(req.Header)
	if err != nil {
		function.WriteClassed(w, err)
		return
	}
	out, err := sc.call(req.Context(), function.CallRequest{Namespace: parts[0], Function: parts[1], ID: id, Arg: arg, Event: ev, Wait: wait,
		Traceparent: tracing.Valid(req.Header.Get(tracing.Header))})
	if errors.Is(err, function.ErrAbandoned) {
		// Stand for the crash it is: the connection drops, no answer.
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		if req.Context().Err() == nil {
			function.WriteClassed(w, err)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// call runs a synchronous call within its wait.
func (sc *syncCalls) call(ctx context.Context, req function.CallRequest) (*api.FuncInstance, error) {
	ns, fn, arg := req.Namespace, req.Function, req.Arg
	if err := call.CheckArg(len(arg)); err != nil {
		return nil, err
	}
	// The apiserver leaves this check to the runner, whose cache answers
	// it without a store read.
	fn, rev, ok := function.SplitTarget(fn)
	if !ok {
		return nil, errdefs.BadRequest("", "%q: a call names a revision by its number, NAME@N with N from 1", req.Function)
	}
	f, err := sc.stepper.lookupFunc(ctx, ns, fn)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("function %q not found in namespace %q: %w", fn, ns, errdefs.ErrNotFound)
	}
	if rev != 0 {
		if _, err := sc.stepper.revision(ctx, f, rev); err != nil {
			return nil, fmt.Errorf("%w (mkctl func revisions %s lists them)", err, fn)
		}
	}
	inst := call.New(req, call.Origin{Runner: sc.self, Sync: true, Created: time.Now().UTC().Truncate(time.Second)})
	return sc.run(ctx, inst, req.Wait)
}

// syncChain is one chain driven in memory.
type syncChain struct {
	mu        sync.Mutex
	cur       *api.FuncInstance
	handedOff bool
	done      chan struct{}
}

// run drives inst until it ends or wait runs out, and returns it as it
// stands then. It fails when reqCtx ends first (the call is dropped) and
// when the runner is abandoned mid-call, as a crash would.
func (sc *syncCalls) run(reqCtx context.Context, inst *api.FuncInstance, wait time.Duration) (*api.FuncInstance, error) {
	key := inst.Namespace + "/" + inst.Name
	release := sc.instances.adopt(key)
	ctx, cancel := context.WithCancel(sc.ctx)
	ch := &syncChain{cur: inst, done: make(chan struct{})}
	go func() {
		defer release()
		defer cancel()
		sc.chain(ctx, ch)
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ch.done:
	case <-timer.C:
	case <-reqCtx.Done():
		ch.mu.Lock()
		defer ch.mu.Unlock()
		if !ch.handedOff {
			cancel()
		}
		return nil, fmt.Errorf("the caller left: %w", context.Cause(reqCtx))
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !call.Terminal(ch.cur) && function.Abandoned(sc.ctx) {
		return nil, fmt.Errorf("function runner %s stopped during the call: %w (%w)", sc.self, errdefs.ErrUnavailable, function.ErrAbandoned)
	}
	ch.handedOff = true
	if call.Terminal(ch.cur) {
		return ch.cur, nil
	}
	// A copy: the chain goes on with ch.cur, the caller sets its fields.
	return call.Copy(ch.cur), nil
}

// chain runs the steps; once handed off, it records each step's outcome on
// the stored instance like any claimed instance.
func (sc *syncCalls) chain(ctx context.Context, ch *syncChain) {
	defer close(ch.done)
	ch.mu.Lock()
	cur := ch.cur
	ch.mu.Unlock()
	for !call.Terminal(cur) {
		next, err := sc.stepper.advance(ctx, cur)
		if err != nil {
			return
		}
		ch.mu.Lock()
		if !ch.handedOff {
			ch.cur = next
			cur = next
			ch.mu.Unlock()
			continue
		}
		ch.mu.Unlock()
		sc.instances.takeOver(ctx, cur, next)
		return
	}
}
