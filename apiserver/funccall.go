package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// caller runs function calls: it records each call as a FuncInstance in
// etcd before answering, then drives the chain step by step, writing the
// cursor (the next function and its argument) after every step, so that an
// apiserver that restarts resumes every unfinished chain.
type caller struct {
	funcs, instances, pods *registry
	eps                    *endpointCache
	owners                 *podOwners
	counter                *callCounter
	http                   *http.Client
	hopLimit               int
	coldStart              time.Duration
	metrics                *funcMetrics

	// ctx is the server's lifetime: chains outlive the request that started them.
	ctx context.Context

	mu      sync.Mutex
	running map[string]bool
	waiters map[string][]chan *api.FuncInstance
}

const (
	// Step records keep this much of an argument, result or output; the
	// final result is kept whole.
	maxRecordBytes = 16 << 10
	// maxArgBytes bounds what a chain passes from step to step.
	maxArgBytes = 512 << 10
	// maxAnswerBytes bounds a runtime's answer: a result over the limit
	// must still be read to be refused by its size, and the answer is
	// JSON, where a control character of the result or of the output
	// (cut by the runtime after 1 Mi characters) takes six bytes.
	maxAnswerBytes = 6*(maxArgBytes+1) + 6*(1<<20) + 64<<10
	// coldRemindInterval is how often a waiting call re-asserts that its
	// function needs a pod.
	coldRemindInterval = 2 * time.Second
)

func newCaller(s *Server) *caller {
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     60 * time.Second,
	}
	return &caller{
		funcs:     s.registries[api.FuncsResource.Name],
		instances: s.registries[api.FuncInstancesResource.Name],
		pods:      s.registries[api.PodsResource.Name],
		eps:       newEndpointCache(s.registries[api.EndpointsResource.Name]),
		owners:    newPodOwners(s.registries[api.FuncsResource.Name], s.registries[api.PodsResource.Name]),
		counter:   newCallCounter(s.registries[api.FuncsResource.Name], s.cfg.FuncCounterFlush),
		http:      &http.Client{Transport: transport},
		hopLimit:  s.cfg.FuncHopLimit,
		coldStart: s.cfg.FuncColdStartTimeout,
		metrics:   newFuncMetrics(s.metrics),
		// Serve replaces it with the server's lifetime.
		ctx:     context.Background(),
		running: map[string]bool{},
		waiters: map[string][]chan *api.FuncInstance{},
	}
}

// run starts the caches and resumes unfinished chains; it returns when ctx ends.
func (c *caller) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.eps.run(ctx) }()
	go func() { defer wg.Done(); c.counter.run(ctx) }()
	c.resume(ctx)
	wg.Wait()
}

// resume relaunches every chain that had not finished when the apiserver stopped.
func (c *caller) resume(ctx context.Context) {
	for ctx.Err() == nil {
		objs, _, err := c.instances.list(ctx, "", filter{})
		if err != nil {
			log.WithError(err).Warn("function calls: listing instances to resume failed")
			sleepCtx(ctx, time.Second)
			continue
		}
		n := 0
		for _, o := range objs {
			inst := o.(*api.FuncInstance)
			if !terminal(inst) {
				c.launch(inst.Namespace, inst.Name, inst)
				n++
			}
		}
		if n > 0 {
			log.WithField("instances", n).Info("resuming unfinished function calls")
		}
		return
	}
}

func terminal(inst *api.FuncInstance) bool {
	return inst.Status.Phase == api.InstanceSucceeded || inst.Status.Phase == api.InstanceFailed
}

func instanceKey(ns, id string) string { return ns + "/" + id }

// start records a call of fn and launches its chain; with subscribe, the
// returned waiter sees the chain's end.
func (c *caller) start(ctx context.Context, ns, fn string, arg []byte, subscribe bool) (*api.FuncInstance, *waiter, error) {
	if len(arg) > maxArgBytes {
		return nil, nil, fmt.Errorf("argument of %d bytes is larger than the limit of %d: %w", len(arg), maxArgBytes, errdefs.ErrTooLarge)
	}
	if _, err := c.funcs.get(ctx, ns, fn); err != nil {
		if errdefs.IsNotFound(err) {
			return nil, nil, fmt.Errorf("function %q not found in namespace %q: %w", fn, ns, errdefs.ErrNotFound)
		}
		return nil, nil, err
	}
	inst := &api.FuncInstance{
		ObjectMeta: api.ObjectMeta{Name: uuid.NewString(), Labels: map[string]string{function.LabelFunc: fn}},
		Spec:       api.FuncInstanceSpec{Function: fn, Arg: string(arg)},
		// Accepted calls start at once: the chain is running from here on.
		Status: api.FuncInstanceStatus{Phase: api.InstanceRunning, Next: &api.FuncStep{Function: fn, Arg: string(arg)}},
	}
	created, err := c.instances.create(ctx, ns, inst)
	if err != nil {
		return nil, nil, err
	}
	out := created.(*api.FuncInstance)
	var w *waiter
	if subscribe {
		w = c.subscribe(ns, out.Name)
	}
	c.launch(ns, out.Name, out)
	return out, w, nil
}

// launch drives an instance's chain unless this process already does.
// known, when not nil, is the instance as just stored, saving a read.
func (c *caller) launch(ns, id string, known *api.FuncInstance) {
	key := instanceKey(ns, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[key] {
		return
	}
	c.running[key] = true
	go c.drive(ns, id, known)
}

func (c *caller) isRunning(ns, id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running[instanceKey(ns, id)]
}

// drive runs the steps of an instance until it ends or the server stops.
func (c *caller) drive(ns, id string, inst *api.FuncInstance) {
	ctx := c.ctx
	key := instanceKey(ns, id)
	defer func() {
		c.mu.Lock()
		delete(c.running, key)
		c.mu.Unlock()
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if inst == nil {
			obj, err := c.instances.get(ctx, ns, id)
			if errdefs.IsNotFound(err) {
				return
			}
			if err != nil {
				log.WithError(err).WithField("instance", id).Warn("function call: reading instance failed")
				sleepCtx(ctx, backoff)
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			inst = obj.(*api.FuncInstance)
		}
		if terminal(inst) {
			c.notify(key, inst)
			return
		}
		next, err := c.step(ctx, inst)
		if ctx.Err() != nil {
			// Shutting down: the cursor in etcd still names this step,
			// and the next apiserver runs it again.
			return
		}
		if err != nil {
			// Not even the instance's failure could be stored (etcd is
			// unavailable): the step runs again from the stored cursor,
			// ever less often.
			log.WithError(err).WithField("instance", id).Warn("function call: recording a step failed")
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			inst = nil
			continue
		}
		backoff = 100 * time.Millisecond
		if terminal(next) {
			c.metrics.ended(next)
			c.notify(key, next)
			return
		}
		// next is the instance as stored by the step: no need to read it.
		inst = next
	}
}

// step runs the instance's next step and records its outcome.
func (c *caller) step(ctx context.Context, inst *api.FuncInstance) (*api.FuncInstance, error) {
	ns := inst.Namespace
	cur := inst.Status.Next
	if cur == nil {
		return c.finish(ctx, inst, nil, "", "instance has no next step")
	}
	if cur.Function == api.FuncReturn {
		return c.finish(ctx, inst, nil, cur.Arg, "")
	}
	if inst.Status.Hops >= c.hopLimit {
		return c.finish(ctx, inst, nil, "", fmt.Sprintf("hop limit of %d reached before RETURN (the chain loops?): next was %q", c.hopLimit, cur.Function))
	}
	obj, err := c.funcs.get(ctx, ns, cur.Function)
	if errdefs.IsNotFound(err) {
		msg := fmt.Sprintf("function %q not found", cur.Function)
		if n := len(inst.Status.Steps); n > 0 {
			msg += fmt.Sprintf(" (called by %q)", inst.Status.Steps[n-1].Function)
		}
		return c.finish(ctx, inst, nil, "", msg)
	}
	if err != nil {
		return nil, err
	}
	f := obj.(*api.Func)
	start := time.Now().UTC()
	rec := api.FuncStepRecord{Function: f.Name, Arg: truncate(cur.Arg), Start: &start}
	res, target, err := c.invoke(ctx, f, inst, cur.Arg)
	rec.DurationMs = time.Since(start).Milliseconds()
	c.metrics.step(&rec)
	rec.Pod, rec.Node = target.pod, target.node
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		rec.Error = err.Error()
		return c.finish(ctx, inst, &rec, "", fmt.Sprintf("function %q: %v", f.Name, err))
	}
	rec.RunMs = res.DurationMs
	rec.Output = truncate(res.Output)
	if res.Pod != "" && rec.Pod == "" {
		rec.Pod = res.Pod
	}
	if res.Error != nil {
		rec.Error = res.Error.String()
		if res.Error.Trace != "" {
			rec.Error += "\n" + truncate(res.Error.Trace)
		}
		return c.finish(ctx, inst, &rec, "", fmt.Sprintf("function %q failed: %s", f.Name, res.Error.String()))
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
	if len(res.Result) > maxArgBytes {
		return c.finish(ctx, inst, &rec, "", fmt.Sprintf("function %q returned %d bytes, more than the limit of %d", f.Name, len(res.Result), maxArgBytes))
	}
	if nextFn == api.FuncReturn {
		// The last step and the result go to etcd in one write.
		return c.finish(ctx, inst, &rec, res.Result, "")
	}
	return c.record(ctx, inst, &rec, func(i *api.FuncInstance) {
		i.Status.Phase = api.InstanceRunning
		i.Status.Steps = append(i.Status.Steps, rec)
		i.Status.Hops++
		i.Status.Next = &api.FuncStep{Function: nextFn, Arg: res.Result}
	})
}

// recordAttempts bounds the writes of one step's outcome: a step whose
// outcome cannot be stored ends its instance instead of running again.
const recordAttempts = 3

// record stores a step's outcome (rec, when a step ran, and the changes of
// apply). When that write fails, even after retries, the instance ends
// Failed naming why, with the step's record stripped of its data; the step
// is not run again. An error is returned only when that cannot be stored
// either.
func (c *caller) record(ctx context.Context, inst *api.FuncInstance, rec *api.FuncStepRecord, apply func(*api.FuncInstance)) (*api.FuncInstance, error) {
	out, err := c.write(ctx, inst, apply)
	if err == nil || ctx.Err() != nil {
		return out, err
	}
	what := "the outcome of the chain"
	if rec != nil {
		what = fmt.Sprintf("the outcome of step %d (function %q)", inst.Status.Hops+1, rec.Function)
	}
	msg := fmt.Sprintf("%s could not be recorded: %v", what, err)
	log.WithError(err).WithField("instance", inst.Name).Warn("function call: a step's outcome cannot be recorded, the instance fails")
	fail := func(slim *api.FuncStepRecord) func(*api.FuncInstance) {
		return func(i *api.FuncInstance) {
			if slim != nil {
				i.Status.Steps = append(i.Status.Steps, *slim)
				i.Status.Hops++
			}
			now := time.Now().UTC()
			i.Status.CompletionTime = &now
			i.Status.Next = nil
			i.Status.Phase = api.InstanceFailed
			i.Status.Result = ""
			i.Status.Error = msg
		}
	}
	if rec != nil {
		slim := api.FuncStepRecord{Function: rec.Function, Start: rec.Start, DurationMs: rec.DurationMs, RunMs: rec.RunMs,
			Pod: rec.Pod, Node: rec.Node, Check: rec.Check, Error: "not recorded: " + err.Error()}
		if out, err = c.write(ctx, inst, fail(&slim)); err == nil || !errdefs.IsTooLarge(err) {
			return out, err
		}
	}
	// The instance is too large for even one more record.
	return c.write(ctx, inst, fail(nil))
}

// write applies fn to the stored instance, retrying a few times what may
// pass (a write too large never will).
func (c *caller) write(ctx context.Context, inst *api.FuncInstance, fn func(*api.FuncInstance)) (*api.FuncInstance, error) {
	backoff := 100 * time.Millisecond
	var err error
	for attempt := 1; ; attempt++ {
		var out api.Object
		out, err = c.instances.mutateFrom(ctx, inst, func(o api.Object) (api.Object, error) {
			i := o.(*api.FuncInstance)
			fn(i)
			return i, nil
		})
		if err == nil {
			return out.(*api.FuncInstance), nil
		}
		if attempt == recordAttempts || errdefs.IsTooLarge(err) || errdefs.IsNotFound(err) || ctx.Err() != nil {
			return nil, err
		}
		sleepCtx(ctx, backoff)
		backoff *= 2
	}
}

// finish ends an instance: Succeeded with result when errMsg is empty, else Failed.
func (c *caller) finish(ctx context.Context, inst *api.FuncInstance, rec *api.FuncStepRecord, result, errMsg string) (*api.FuncInstance, error) {
	return c.record(ctx, inst, rec, func(i *api.FuncInstance) {
		if rec != nil {
			i.Status.Steps = append(i.Status.Steps, *rec)
			i.Status.Hops++
		}
		now := time.Now().UTC()
		i.Status.CompletionTime = &now
		i.Status.Next = nil
		if errMsg != "" {
			i.Status.Phase = api.InstanceFailed
			i.Status.Error = errMsg
		} else {
			i.Status.Phase = api.InstanceSucceeded
			i.Status.Result = result
			i.Status.Error = ""
		}
	})
}

func truncate(s string) string {
	if len(s) <= maxRecordBytes {
		return s
	}
	return s[:maxRecordBytes] + fmt.Sprintf("… (%d bytes cut)", len(s)-maxRecordBytes)
}

// target says where a step ran.
type target struct {
	pod, node string
}

// invoke runs one call of f: on its warm pool (v2) or in a fresh pod (v1).
func (c *caller) invoke(ctx context.Context, f *api.Func, inst *api.FuncInstance, arg string) (*function.Result, target, error) {
	if f.APIVersion == api.FuncAPIVersionV1 {
		return c.invokeInFreshPod(ctx, f, inst, arg)
	}
	return c.invokeOnPool(ctx, f, arg)
}

// invokeOnPool sends the call to the least busy ready pod of the function.
// With none ready it raises the counter at once (so the ReplicaSet scales
// up) and waits, woken by the endpoints watch, up to the cold-start timeout.
func (c *caller) invokeOnPool(ctx context.Context, f *api.Func, arg string) (*function.Result, target, error) {
	name := function.ObjectName(f.Name)
	deadline := time.NewTimer(c.coldStart)
	defer deadline.Stop()
	remind := time.NewTicker(coldRemindInterval)
	defer remind.Stop()
	counted := false
	for {
		addr, release, wait, ok := c.eps.pick(f.Namespace, name)
		if !counted {
			c.counter.add(f.Namespace, f.Name, !ok)
			if !ok {
				c.metrics.coldStarts.WithLabelValues(f.Name).Inc()
			}
			counted = true
		}
		if !ok {
			select {
			case <-wait:
				continue
			case <-remind.C:
				// Still no pod: make sure the pool is asked for one.
				c.counter.needOne(f.Namespace, f.Name)
				continue
			case <-deadline.C:
				return nil, target{}, fmt.Errorf("cold start timed out after %s: no pod became ready: %w", c.coldStart, errdefs.ErrTimeout)
			case <-ctx.Done():
				return nil, target{}, ctx.Err()
			}
		}
		if err := c.owners.check(ctx, f, addr); err != nil {
			release()
			if errors.Is(err, errNotOwned) {
				// Not a pod of this function: it never gets the call.
				log.WithError(err).WithField("function", f.Name).Warn("function call: skipping an endpoint that is not the function's pod")
				c.eps.drop(f.Namespace, name, addr)
			} else {
				sleepCtx(ctx, 100*time.Millisecond)
			}
			continue
		}
		tgt := target{node: addr.NodeName}
		if addr.TargetRef != nil {
			tgt.pod = addr.TargetRef.Name
		}
		res, err := c.post(ctx, addr.IP, addr.Port, f, arg)
		release()
		if errors.Is(err, errNotServed) {
			// The pod went away or is draining: the call did not run there.
			c.eps.drop(f.Namespace, name, addr)
			continue
		}
		return res, tgt, err
	}
}

// errNotServed marks a call the pod refused before running it.
var errNotServed = errors.New("pod did not take the call")

// post sends one call to a runtime.
func (c *caller) post(ctx context.Context, ip string, port int32, f *api.Func, arg string) (*function.Result, error) {
	timeout := function.TimeoutSeconds(&f.Spec)
	rctx, cancel := context.WithTimeout(ctx, time.Duration(timeout+10)*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort(ip, strconv.Itoa(int(port))) + function.InvokePath
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader([]byte(arg)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(function.TimeoutHeader, strconv.Itoa(timeout))
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("%w: %v", errNotServed, err)
		}
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("the pod at %s did not answer within %ds: %w", ip, timeout+10, errdefs.ErrTimeout)
		}
		return nil, fmt.Errorf("calling the pod at %s: %v", ip, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of the pod at %s: %v", ip, err)
	}
	if len(body) > maxAnswerBytes {
		return nil, fmt.Errorf("the pod at %s answered more than %d bytes", ip, maxAnswerBytes)
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		return nil, fmt.Errorf("%w: %s", errNotServed, bytes.TrimSpace(body))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the pod at %s answered %s: %s", ip, resp.Status, bytes.TrimSpace(body))
	}
	var res function.Result
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("the pod at %s answered something that is not a result: %v", ip, err)
	}
	return &res, nil
}

// notify wakes the requests waiting for an instance to end.
func (c *caller) notify(key string, inst *api.FuncInstance) {
	c.mu.Lock()
	ws := c.waiters[key]
	delete(c.waiters, key)
	c.mu.Unlock()
	for _, w := range ws {
		w <- inst
	}
}

// waiter is a subscription to the end of one instance. Subscribing before
// the chain is launched means no end can be missed, and no read is needed.
type waiter struct {
	c   *caller
	ns  string
	id  string
	key string
	ch  chan *api.FuncInstance
}

func (c *caller) subscribe(ns, id string) *waiter {
	w := &waiter{c: c, ns: ns, id: id, key: instanceKey(ns, id), ch: make(chan *api.FuncInstance, 1)}
	c.mu.Lock()
	c.waiters[w.key] = append(c.waiters[w.key], w.ch)
	c.mu.Unlock()
	return w
}

func (w *waiter) cancel() {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := c.waiters[w.key]
	for i, ch := range ws {
		if ch == w.ch {
			c.waiters[w.key] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(c.waiters[w.key]) == 0 {
		delete(c.waiters, w.key)
	}
}

// wait returns the instance once it has ended, or its current state when
// ctx ends first.
func (w *waiter) wait(ctx context.Context) (*api.FuncInstance, error) {
	defer w.cancel()
	select {
	case inst := <-w.ch:
		return inst, nil
	case <-ctx.Done():
		obj, err := w.c.instances.get(context.WithoutCancel(ctx), w.ns, w.id)
		if err != nil {
			return nil, err
		}
		return obj.(*api.FuncInstance), nil
	}
}

// view is the flat form of GET /api/funcs/:id.
func view(inst *api.FuncInstance) api.FuncInstanceView {
	steps := inst.Status.Steps
	if steps == nil {
		steps = []api.FuncStepRecord{}
	}
	return api.FuncInstanceView{
		InstanceID: inst.Name, Function: inst.Spec.Function, Status: inst.Status.Phase,
		Result: inst.Status.Result, Error: inst.Status.Error, Steps: steps,
	}
}
