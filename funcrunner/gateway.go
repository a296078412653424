package funcrunner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/tracing"
)

// The function gateway serves the HTTP triggers: a request to a trigger's
// path runs the function synchronously in this runner and answers with
// its result as the body (200; 500 with the error when the call failed;
// 202 with the instance id when it outlives the gateway's wait). The
// record of the call, naming the trigger, is stored after the answer, as
// the apiserver stores a synchronous call's.

// HeaderInstanceID names, in a gateway answer, the call's instance (GET
// /api/funcs/ID reads it).
const HeaderInstanceID = "X-Minik8s-Instance-Id"

// gatewayWait bounds a gateway call; a longer one goes on asynchronously.
const gatewayWait = 60 * time.Second

// pathIndex finds the HTTP trigger of a path.
const pathIndex = "http-path"

type gateway struct {
	self     string
	client   *client.Client
	triggers *cache.Informer[api.Trigger, *api.Trigger]
	refs     triggerRefs
	call     func(ctx context.Context, req function.CallRequest) (*api.FuncInstance, error)
	records  chan *api.FuncInstance
}

func newGateway(self string, c *client.Client, triggers *cache.Informer[api.Trigger, *api.Trigger], refs triggerRefs,
	call func(ctx context.Context, req function.CallRequest) (*api.FuncInstance, error)) *gateway {
	triggers.AddIndexer(pathIndex, func(t *api.Trigger) []string {
		if t.Spec.HTTP == nil {
			return nil
		}
		return []string{t.Spec.HTTP.Path}
	})
	return &gateway{self: self, client: c, triggers: triggers, refs: refs, call: call, records: make(chan *api.FuncInstance, 1024)}
}

// serve serves the gateway on ln until ctx ends, storing records and
// marking the HTTP triggers it serves ready.
func (g *gateway) serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go g.storeRecords(ctx)
	go g.markReady(ctx)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	log.WithField("address", ln.Addr().String()).Info("function gateway serving")
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	found := g.triggers.Lister().ByIndex(pathIndex, r.URL.Path)
	if len(found) == 0 {
		writeClassed(w, fmt.Errorf("no trigger serves path %s: %w", r.URL.Path, errdefs.ErrNotFound))
		return
	}
	t := found[0]
	if m := t.Spec.HTTP.Methods; len(m) > 0 && !slices.Contains(m, r.Method) {
		w.Header().Set("Allow", fmt.Sprint(m))
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("trigger %s/%s takes %v, not %s", t.Namespace, t.Name, m, r.Method))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBytes))
	if err != nil {
		writeClassed(w, fmt.Errorf("the request body: %v: %w", err, errdefs.ErrTooLarge))
		return
	}
	id := uuid.NewString()
	ev, arg, err := function.ReadEvent(r.Header, body, api.FuncEvent{ID: id, Source: r.URL.Path, Type: function.EventTypeHTTP,
		Time: time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		writeClassed(w, err)
		return
	}
	function.RecordRequest(ev, r)
	inst, err := g.call(r.Context(), function.CallRequest{Namespace: t.Namespace, Function: t.Spec.Function, ID: id,
		Arg: arg, Event: ev, Trigger: g.refs.ref(t), Wait: gatewayWait, Traceparent: tracing.Valid(r.Header.Get(tracing.Header))})
	if err != nil {
		writeClassed(w, err)
		return
	}
	inst.Namespace = t.Namespace
	inst.Spec.User = g.self
	w.Header().Set(HeaderInstanceID, inst.Name)
	if terminal(inst) && r.Header.Get(function.HeaderLog) != "" {
		w.Header().Set(function.HeaderLog, function.LogHeader(inst.Status.Steps))
	}
	if terminal(inst) && function.AcceptsEvent(r) {
		writeOutcomeEvent(w, inst, r.URL.Path)
	} else {
		writeOutcome(w, inst)
	}
	if !terminal(inst) {
		// Still running: the runner goes on with it once it is stored,
		// whether or not the caller waits for the 202.
		g.storeOne(context.WithoutCancel(r.Context()), inst)
		return
	}
	// Backpressure, never loss: a full queue holds the answered caller's
	// connection a moment, not its record.
	select {
	case g.records <- inst:
	case <-r.Context().Done():
		g.storeOne(context.WithoutCancel(r.Context()), inst)
	}
}

// writeOutcome answers with the result as the body (200), the error (500),
// or the instance id of a call still running (202).
func writeOutcome(w http.ResponseWriter, inst *api.FuncInstance) {
	switch inst.Status.Phase {
	case api.InstanceSucceeded:
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, inst.Status.Result)
	case api.InstanceFailed:
		writeError(w, http.StatusInternalServerError, "FunctionFailed", inst.Status.Error)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]string{"instanceId": inst.Name, "status": inst.Status.Phase})
	}
}

// writeOutcomeEvent answers an ended call as a CloudEvent: a result event
// (200) or an error event (500).
func writeOutcomeEvent(w http.ResponseWriter, inst *api.FuncInstance, source string) {
	b, err := function.OutcomeEvent(inst, source)
	if err != nil {
		writeClassed(w, err)
		return
	}
	w.Header().Set("Content-Type", function.ContentTypeCloudEvent)
	if inst.Status.Phase == api.InstanceFailed {
		w.WriteHeader(http.StatusInternalServerError)
	}
	_, _ = w.Write(b)
}

// maxEventBytes bounds a request: an argument at its limit, in a
// structured event where JSON escapes may take six bytes a byte.
const maxEventBytes = 6*maxArgBytes + 64<<10

// storeRecords writes the records of the gateway's ended calls in
// batches: up to recordBatch records, lingering recordLinger for more, in
// one request per namespace, which the apiserver stores in one write.
func (g *gateway) storeRecords(ctx context.Context) {
	for {
		var first *api.FuncInstance
		select {
		case <-ctx.Done():
			g.storeLeft(ctx)
			return
		case first = <-g.records:
		}
		byNS := map[string][]api.FuncInstance{first.Namespace: {*first}}
		size := recordSize(first)
		linger := time.NewTimer(recordLinger)
	collect:
		for n := 1; n < recordBatch && size < recordBatchBytes; n++ {
			select {
			case inst := <-g.records:
				byNS[inst.Namespace] = append(byNS[inst.Namespace], *inst)
				size += recordSize(inst)
			case <-linger.C:
				break collect
			}
		}
		linger.Stop()
		for ns, items := range byNS {
			g.storeBatch(ctx, ns, items)
		}
	}
}

const (
	recordBatch  = 128
	recordLinger = 5 * time.Millisecond
	// recordBatchBytes keeps a batch well under the apiserver's limit on a
	// request body (1 MiB); a record alone may be larger: it goes alone.
	recordBatchBytes = 256 << 10
)

// recordSize is about how many bytes a record takes as JSON.
func recordSize(inst *api.FuncInstance) int {
	n := 2048 + len(inst.Spec.Arg) + len(inst.Status.Result) + len(inst.Status.Error)
	for _, s := range inst.Status.Steps {
		n += 512 + len(s.Arg) + len(s.Result) + len(s.Output) + len(s.Error)
	}
	return n + 256*len(inst.Status.Trace)
}

func (g *gateway) storeBatch(ctx context.Context, ns string, items []api.FuncInstance) {
	list := &api.FuncInstanceList{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: api.FuncInstancesResource.Kind + "List"}}
	for _, inst := range items {
		inst.ResourceVersion, inst.UID = "", ""
		list.Items = append(list.Items, inst)
	}
	path := api.FuncInstancesResource.Path(ns, "")
	for attempt := 0; attempt < recordAttempts; attempt++ {
		err := g.client.Do(ctx, http.MethodPost, path, list, nil)
		if err == nil {
			return
		}
		if errdefs.IsTooLarge(err) && len(items) > 1 {
			// Larger than a request may be: one at a time.
			for i := range list.Items {
				g.storeOne(ctx, &list.Items[i])
			}
			return
		}
		log.WithError(err).WithFields(log.Fields{"namespace": ns, "records": len(items)}).Warn("function gateway: storing records failed")
		if errdefs.IsInvalid(err) || errdefs.IsForbidden(err) || ctx.Err() != nil {
			return
		}
		sleep(ctx, time.Second)
	}
}

// storeLeft stores, on the way out, the records still queued: their calls
// were answered, so their records are owed.
func (g *gateway) storeLeft(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	byNS := map[string][]api.FuncInstance{}
	for len(g.records) > 0 {
		inst := <-g.records
		byNS[inst.Namespace] = append(byNS[inst.Namespace], *inst)
	}
	for ns, items := range byNS {
		g.storeBatch(sctx, ns, items)
	}
}

// storeOne writes one record, retrying a while.
func (g *gateway) storeOne(ctx context.Context, inst *api.FuncInstance) {
	inst.ResourceVersion, inst.UID = "", ""
	for attempt := 0; attempt < recordAttempts; attempt++ {
		_, err := g.client.FuncInstances(inst.Namespace).Create(ctx, inst)
		if err == nil || errdefs.IsAlreadyExists(err) {
			return
		}
		log.WithError(err).WithField("instance", inst.Name).Warn("function gateway: storing the record failed")
		if errdefs.IsInvalid(err) || errdefs.IsForbidden(err) || ctx.Err() != nil {
			return
		}
		sleep(ctx, time.Second)
	}
}

const recordAttempts = 5

// markReady marks the HTTP triggers ready once this gateway serves them.
func (g *gateway) markReady(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for _, t := range g.triggers.Lister().List(nil) {
			if t.Spec.HTTP == nil || t.Status.Ready {
				continue
			}
			next := cache.DeepCopy(t)
			next.Status = api.TriggerStatus{Ready: true, ServedBy: g.self, Message: "served on the function gateway"}
			if _, err := g.client.Triggers(t.Namespace).UpdateStatus(ctx, next); err != nil && !errdefs.IsConflict(err) && ctx.Err() == nil {
				log.WithError(err).WithField("trigger", t.Namespace+"/"+t.Name).Warn("function gateway: marking the trigger ready failed")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
