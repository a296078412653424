package funcapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/egress"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
	"minik8s/pkg/rbac"
	"minik8s/pkg/tracing"
)

// CallRunner runs synchronous calls: a function runner in this process.
type CallRunner interface {
	// Call runs fn as instance id within wait and returns the instance,
	// ended unless wait ran out first; function.ErrNotServing says it did
	// not take the call.
	Call(ctx context.Context, req function.CallRequest) (*api.FuncInstance, error)
}

// Calls is the apiserver's side of the function API: it stores calls and
// hands them over; function runners drive them. An asynchronous call is a
// FuncInstance stored before the 202, which a runner claims. A synchronous
// call is handed to a live runner, which drives it in memory and answers
// the instance; its record is stored after the caller has the answer.
type Calls struct {
	funcs, instances *registry.Store
	revisions        *registry.Store
	runners          *runnerDirectory
	local            CallRunner
	retention        time.Duration
	maxPending       int
	pending          *pendingBytes
	records          *call.Records
	http             *http.Client
	// clientCert is the server's (nil without a secure port), for
	// runners that serve TLS; pinned holds a client per runner
	// certificate.
	clientCert func() *tls.Certificate
	pinned     sync.Map // certificate hash → *http.Client
	// Exporter sends the apiserver's spans (nil: kept with the
	// instance); set before Run.
	Exporter *tracing.Exporter
	// egress judges callback URLs (the runners' guard has the last word).
	egress *egress.Guard
}

const (
	// maxRunnerAnswer bounds a runner's answer: an instance with its
	// argument, result and step records.
	maxRunnerAnswer = 64 << 20
	// handoffMargin is how long past the caller's wait a runner may take
	// to answer (it answers at the wait with the instance still running).
	handoffMargin = 30 * time.Second
)

// Config is what the function API's calls are made of.
type Config struct {
	// Funcs, Instances and Leases are the registries of the function
	// templates, the call records and the runners' Leases.
	Funcs, Instances, Leases *registry.Store
	// Revisions are the functions' revisions, which a call may name.
	Revisions *registry.Store
	// Retention is how long an ended call's record is kept.
	Retention time.Duration
	// MaxPending bounds the asynchronous calls not ended yet;
	// MaxPendingBytes what their arguments hold.
	MaxPending      int
	MaxPendingBytes int64
	// Local runs synchronous calls in this process, when set.
	Local CallRunner
	// ClientCert is the apiserver's client certificate towards runners
	// that serve TLS (nil: none, without a secure port).
	ClientCert func() *tls.Certificate
	// ClusterCIDR, ServiceCIDR and EgressAllowCIDRs judge callback URLs
	// (callbackGuard).
	ClusterCIDR, ServiceCIDR string
	EgressAllowCIDRs         []netip.Prefix
}

// NewCalls is the function API's calls over cfg's registries.
func NewCalls(cfg Config) *Calls {
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     60 * time.Second,
	}
	return &Calls{
		funcs:      cfg.Funcs,
		revisions:  cfg.Revisions,
		instances:  cfg.Instances,
		runners:    newRunnerDirectory(cfg.Leases),
		retention:  cfg.Retention,
		maxPending: cfg.MaxPending,
		pending:    newPendingBytes(cfg.Instances, cfg.MaxPendingBytes),
		local:      cfg.Local,
		records:    newRecords(cfg.Instances),
		http:       &http.Client{Transport: transport},
		clientCert: cfg.ClientCert,
		egress:     callbackGuard(cfg),
	}
}

// callbackGuard judges callback URLs as the runners' guard will, as far
// as the apiserver can tell: the built-in classes, the cluster's ranges
// and this machine's addresses, less what the operator opened.
func callbackGuard(cfg Config) *egress.Guard {
	var deny []egress.Range
	if r, ok := egress.CIDR(cfg.ClusterCIDR, "in the cluster's pod range"); ok {
		deny = append(deny, r)
	}
	if r, ok := egress.CIDR(cfg.ServiceCIDR, "in the cluster's service range"); ok {
		deny = append(deny, r)
	}
	return egress.New(egress.Config{Allow: cfg.EgressAllowCIDRs, Deny: deny, Sources: []egress.Source{egress.OwnAddresses}})
}

// Run follows the runners and stores records until ctx ends.
func (c *Calls) Run(ctx context.Context) {
	var bg sync.WaitGroup
	bg.Go(func() { c.runners.run(ctx) })
	if c.pending.max > 0 {
		bg.Go(func() { c.pending.run(ctx) })
	}
	c.records.Run(ctx)
	bg.Wait()
}

// checkCall checks what every call must satisfy before it is accepted.
// With lookup, the function must exist (a runner the call is handed to
// checks that itself, from its cache).
func (c *Calls) checkCall(ctx context.Context, ns, fn string, arg []byte, callbackURL string, lookup bool) error {
	if err := call.CheckArg(len(arg)); err != nil {
		return err
	}
	if callbackURL != "" {
		// The runner POSTs the result there on the caller's behalf: an
		// address that trusts the platform (the local port acts as the
		// admin) is refused now, so the caller learns at once.
		if err := c.egress.CheckURL(callbackURL); err != nil {
			return errdefs.BadRequest("X-Callback-Url", "%q: %v", callbackURL, err)
		}
	}
	if !lookup {
		return nil
	}
	fn, n, _ := function.SplitTarget(fn)
	if _, err := c.funcs.Get(ctx, ns, fn); err != nil {
		if errdefs.IsNotFound(err) {
			return fmt.Errorf("function %q not found in namespace %q: %w", fn, ns, errdefs.ErrNotFound)
		}
		return err
	}
	if n == 0 || c.revisions == nil {
		return nil
	}
	r, err := c.revisions.Get(ctx, ns, function.RevisionName(fn, n))
	if errdefs.IsNotFound(err) || (err == nil && r.(*api.FuncRevision).Spec.Function != fn) {
		return fmt.Errorf("function %q has no revision %d (mkctl func revisions %s lists them): %w", fn, n, fn, errdefs.ErrNotFound)
	}
	return err
}

// newInstance is an asynchronous call of fn that ctx's user made, not
// yet claimed by any runner.
func newInstance(ctx context.Context, req function.CallRequest, callbackURL string) *api.FuncInstance {
	return call.New(req, call.Origin{User: rbac.UserOf(ctx).Name, CallbackURL: callbackURL})
}

// assign stores an asynchronous call already claimed by a live runner, in
// turn, as a trigger's call is by the runner that made it: the runner then
// drives it without a claim write of its own (one write of the call's
// three or four less). A runner that is gone before it ends it loses it
// as it loses any claim: another takes it over once its Lease expires.
// With no live runner, the first to come claims it.
func (c *Calls) assign(inst *api.FuncInstance) *api.FuncInstance {
	if r, ok := c.runners.pick(); ok {
		call.Claim(inst, r.identity)
	}
	return inst
}

// Start stores an asynchronous call for a runner to claim.
func (c *Calls) Start(ctx context.Context, req function.CallRequest, callbackURL string, span *api.FuncSpan) (*api.FuncInstance, error) {
	ns, fn, arg := req.Namespace, req.Function, req.Arg
	if err := c.checkCall(ctx, ns, fn, arg, callbackURL, true); err != nil {
		return nil, err
	}
	if n := c.runners.backlog(time.Now()); c.maxPending > 0 && n >= c.maxPending {
		return nil, fmt.Errorf("%d asynchronous calls are waiting to run, the most this cluster takes (--max-pending-calls %d); try again shortly: %w",
			n, c.maxPending, errdefs.ErrTooManyRequests)
	}
	// The argument is held twice: the call's and its first step's.
	done, err := c.pending.reserve(2 * int64(len(arg)))
	if err != nil {
		return nil, err
	}
	created, err := c.instances.Create(ctx, ns, c.endSpan(c.assign(newInstance(ctx, req, callbackURL)), span))
	if err != nil {
		done(nil)
		return nil, err
	}
	done(created)
	return created.(*api.FuncInstance), nil
}

// endSpan ends the apiserver's span of a call (taking it to the answer)
// and keeps it with the instance; nil span: none.
func (c *Calls) endSpan(inst *api.FuncInstance, span *api.FuncSpan) *api.FuncInstance {
	if span == nil {
		return inst
	}
	span.EndNs = time.Now().UnixNano()
	call.AddSpans(inst, *span)
	c.Exporter.Add(*span)
	return inst
}

// RunSync runs a call within wait: handed to a live runner, or, with none
// running, stored like an asynchronous call and waited for. The instance
// returned has ended unless wait ran out first.
func (c *Calls) RunSync(ctx context.Context, req function.CallRequest, span *api.FuncSpan) (*api.FuncInstance, error) {
	ns, fn, id, arg, wait := req.Namespace, req.Function, req.ID, req.Arg, req.Wait
	inst, err := c.handOffLocal(ctx, req)
	if errors.Is(err, function.ErrNotServing) {
		r, ok := c.runners.pick()
		if err := c.checkCall(ctx, ns, fn, arg, "", !ok); err != nil {
			return nil, err
		}
		if !ok {
			created, err := c.instances.Create(ctx, ns, c.endSpan(newInstance(ctx, req, ""), span))
			if err != nil {
				return nil, err
			}
			return c.WaitEnded(ctx, created.(*api.FuncInstance), wait)
		}
		inst, err = c.handOff(ctx, r, req)
	}
	if err != nil {
		return nil, err
	}
	inst.Namespace, inst.Name = ns, id
	inst.Spec.User = rbac.UserOf(ctx).Name
	c.endSpan(inst, span)
	if call.Terminal(inst) {
		c.records.Add(ctx, inst)
		return inst, nil
	}
	// The wait ran out first: the instance is stored, claimed by the
	// runner, which goes on driving it as an asynchronous call.
	created, err := c.instances.Create(ctx, ns, inst)
	if err != nil {
		return nil, fmt.Errorf("storing the call that outlived its wait: %w", err)
	}
	return created.(*api.FuncInstance), nil
}

// handOffLocal runs a synchronous call on the runner in this process;
// function.ErrNotServing when there is none serving.
func (c *Calls) handOffLocal(ctx context.Context, req function.CallRequest) (*api.FuncInstance, error) {
	if c.local == nil {
		return nil, function.ErrNotServing
	}
	if err := call.CheckArg(len(req.Arg)); err != nil {
		return nil, err
	}
	// The runner changes the instance no more once it answered it.
	return c.local.Call(ctx, req)
}

// handOff sends a synchronous call to a runner and reads back the instance.
func (c *Calls) handOff(ctx context.Context, r runner, cr function.CallRequest) (*api.FuncInstance, error) {
	rctx, cancel := context.WithTimeout(ctx, cr.Wait+handoffMargin)
	defer cancel()
	q := url.Values{"id": {cr.ID}, "wait": {cr.Wait.String()}}
	u := r.url + function.RunnerCallPath + "/" + url.PathEscape(cr.Namespace) + "/" + url.PathEscape(cr.Function) + "?" + q.Encode()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, u, bytes.NewReader(cr.Arg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	function.SetHandoffEvent(req.Header, cr.Event)
	if cr.Traceparent != "" {
		req.Header.Set(tracing.Header, cr.Traceparent)
	}
	hc, err := c.clientFor(r)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("function runner %s failed during the call: %v: %w", r.identity, err, errdefs.ErrUnavailable)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRunnerAnswer))
	if err != nil {
		return nil, fmt.Errorf("function runner %s failed during the call: %v: %w", r.identity, err, errdefs.ErrUnavailable)
	}
	if resp.StatusCode != http.StatusOK {
		var st api.Status
		if json.Unmarshal(body, &st) == nil && st.Error != "" {
			return nil, errdefs.FromHTTP(resp.StatusCode, st.Reason, st.Field, st.Error)
		}
		return nil, fmt.Errorf("function runner %s answered %s: %s: %w", r.identity, resp.Status, bytes.TrimSpace(body), errdefs.ErrUnavailable)
	}
	inst := &api.FuncInstance{}
	if err := json.Unmarshal(body, inst); err != nil {
		return nil, fmt.Errorf("function runner %s answered something that is not an instance: %v: %w", r.identity, err, errdefs.ErrUnavailable)
	}
	return inst, nil
}

// Retention is how long call records are kept once ended.
func (c *Calls) Retention() time.Duration { return c.retention }

// Get reads an instance: a record still being stored, else the store.
func (c *Calls) Get(ctx context.Context, ns, id string) (*api.FuncInstance, error) {
	if inst, ok := c.records.Get(ns, id); ok {
		return inst, nil
	}
	obj, err := c.instances.Get(ctx, ns, id)
	if err != nil {
		if errdefs.IsNotFound(err) {
			err = fmt.Errorf("function instance %q not found (unknown, or expired: call records are kept for %s): %w", id, c.retention, errdefs.ErrNotFound)
		}
		return nil, err
	}
	return obj.(*api.FuncInstance), nil
}

// WaitEnded follows a stored instance by watch until it ends or wait runs
// out, and returns it as last seen.
func (c *Calls) WaitEnded(ctx context.Context, inst *api.FuncInstance, wait time.Duration) (*api.FuncInstance, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	key := c.instances.Key(inst.Namespace, inst.Name)
	for !call.Terminal(inst) {
		rev, err := parseRV(inst.ResourceVersion)
		if err != nil {
			return nil, err
		}
		events, err := c.instances.Storage.Watch(wctx, key, rev, c.instances.Resource.New)
		if err != nil {
			return inst, nil
		}
		for ev := range events {
			if ev.Type == api.Error {
				break
			}
			if ev.Type == api.Deleted {
				return nil, fmt.Errorf("function instance %q was deleted while it ran: %w", inst.Name, errdefs.ErrNotFound)
			}
			inst = ev.Object.(*api.FuncInstance)
			if call.Terminal(inst) {
				return inst, nil
			}
		}
		if wctx.Err() != nil {
			return inst, nil
		}
		// The watch broke (compaction): read again and follow from there.
		cur, err := c.Get(context.WithoutCancel(ctx), inst.Namespace, inst.Name)
		if err != nil {
			return nil, err
		}
		inst = cur
	}
	return inst, nil
}

var errNoRV = errors.New("no resourceVersion")

func parseRV(rv string) (int64, error) {
	var n int64
	if _, err := fmt.Sscan(rv, &n); err != nil {
		return 0, fmt.Errorf("%w: %q", errNoRV, rv)
	}
	return n, nil
}

// View is the flat form of GET /api/funcs/:id.
func View(inst *api.FuncInstance) api.FuncInstanceView {
	steps := inst.Status.Steps
	if steps == nil {
		steps = []api.FuncStepRecord{}
	}
	return api.FuncInstanceView{
		InstanceID: inst.Name, Namespace: inst.Namespace, Function: inst.Spec.Function, Status: inst.Status.Phase,
		Result: inst.Status.Result, Error: inst.Status.Error, Steps: steps,
	}
}
