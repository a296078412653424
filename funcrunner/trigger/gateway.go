package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
	"minik8s/pkg/tracing"
)

// The function gateway serves the HTTP triggers: a request to a trigger's
// path runs the function synchronously in this runner and answers with
// its result as the body (200; 500 with the error when the call failed;
// 202 with the instance id when it outlives the gateway's wait). The
// record of the call, naming the trigger, is stored after the answer, as
// the apiserver stores a synchronous call's.

// gatewayWait bounds a gateway call; a longer one goes on asynchronously.
const gatewayWait = 60 * time.Second

// pathIndex finds the HTTP trigger of a path.
const pathIndex = "http-path"

// Gateway serves the HTTP triggers, running each call through call.
type Gateway struct {
	self     string
	client   *client.Client
	triggers *cache.Informer[api.Trigger, *api.Trigger]
	refs     Refs
	call     func(ctx context.Context, req function.CallRequest) (*api.FuncInstance, error)
	records  *call.Records
}

// NewGateway returns a gateway of runner self; Serve serves it.
func NewGateway(self string, c *client.Client, triggers *cache.Informer[api.Trigger, *api.Trigger], refs Refs,
	callFn func(ctx context.Context, req function.CallRequest) (*api.FuncInstance, error)) *Gateway {
	triggers.AddIndexer(pathIndex, func(t *api.Trigger) []string {
		if t.Spec.HTTP == nil {
			return nil
		}
		return []string{t.Spec.HTTP.Path}
	})
	return &Gateway{self: self, client: c, triggers: triggers, refs: refs, call: callFn, records: call.NewRecords(recordClient{c}, call.RecordOptions{})}
}

// Serve serves the gateway on ln until ctx ends, storing records and
// marking the HTTP triggers it serves ready.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go g.records.Run(ctx)
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

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	found := g.triggers.Lister().ByIndex(pathIndex, r.URL.Path)
	if len(found) == 0 {
		function.WriteClassed(w, fmt.Errorf("no trigger serves path %s: %w", r.URL.Path, errdefs.ErrNotFound))
		return
	}
	t := found[0]
	if m := t.Spec.HTTP.Methods; len(m) > 0 && !slices.Contains(m, r.Method) {
		allow := strings.Join(m, ", ")
		w.Header().Set("Allow", allow)
		function.WriteError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("trigger %s/%s takes %s, not %s", t.Namespace, t.Name, allow, r.Method))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBytes))
	if err != nil {
		function.WriteClassed(w, fmt.Errorf("the request body: %v: %w", err, errdefs.ErrTooLarge))
		return
	}
	id := uuid.NewString()
	ev, arg, err := function.ReadEvent(r.Header, body, api.FuncEvent{ID: id, Source: r.URL.Path, Type: function.EventTypeHTTP,
		Time: time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		function.WriteClassed(w, err)
		return
	}
	if !function.PassesFilters(t.Spec.Filters, ev) {
		// Filtered out (Knative answers an event no trigger takes the same way).
		w.Header().Set(function.HeaderFiltered, t.Name)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	function.RecordRequest(ev, r)
	inst, err := g.call(r.Context(), function.CallRequest{Namespace: t.Namespace, Function: t.Spec.Function, ID: id,
		Arg: arg, Event: ev, Trigger: g.refs.ref(t), Wait: gatewayWait, Traceparent: tracing.Valid(r.Header.Get(tracing.Header))})
	if err != nil {
		function.WriteClassed(w, err)
		return
	}
	inst.Namespace = t.Namespace
	inst.Spec.User = g.self
	w.Header().Set(function.HeaderInstanceID, inst.Name)
	if call.Terminal(inst) && r.Header.Get(function.HeaderLog) != "" {
		w.Header().Set(function.HeaderLog, function.LogHeader(inst.Status.Steps))
	}
	if call.Terminal(inst) && function.AcceptsEvent(r) {
		writeOutcomeEvent(w, inst, r.URL.Path)
	} else {
		writeOutcome(w, inst)
	}
	if !call.Terminal(inst) {
		// Still running: the runner goes on with it once it is stored,
		// whether or not the caller waits for the 202.
		g.records.StoreNow(context.WithoutCancel(r.Context()), inst)
		return
	}
	// Backpressure, never loss: a full queue holds the answered caller's
	// connection a moment, not its record.
	g.records.Add(r.Context(), inst)
}

// writeOutcome answers with the result (the HTTP answer it describes, or
// the result as the body: 200), the error (500), or the instance id of a
// call still running (202). The gateway is the functions' own origin:
// their answers are theirs to shape.
func writeOutcome(w http.ResponseWriter, inst *api.FuncInstance) {
	switch inst.Status.Phase {
	case api.InstanceSucceeded:
		function.WriteResult(w, string(inst.Status.Result), inst.Status.ResultType, false)
	case api.InstanceFailed:
		function.WriteError(w, http.StatusInternalServerError, "FunctionFailed", inst.Status.Error)
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
		function.WriteClassed(w, err)
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
const maxEventBytes = 6*call.MaxArgBytes + 64<<10

// recordClient stores the records of the gateway's calls through the
// apiserver: a batch is one request per namespace (a FuncInstanceList),
// which the apiserver stores in one write.
type recordClient struct{ client *client.Client }

func (rc recordClient) CreateMany(ctx context.Context, batch []*api.FuncInstance) error {
	byNS := map[string]*api.FuncInstanceList{}
	var order []string
	for _, inst := range batch {
		list := byNS[inst.Namespace]
		if list == nil {
			list = &api.FuncInstanceList{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: api.FuncInstancesResource.Kind + "List"}}
			byNS[inst.Namespace] = list
			order = append(order, inst.Namespace)
		}
		item := *inst
		item.ResourceVersion, item.UID = "", ""
		list.Items = append(list.Items, item)
	}
	for _, ns := range order {
		if err := rc.client.Do(ctx, http.MethodPost, api.FuncInstancesResource.Path(ns, ""), byNS[ns], nil); err != nil {
			return err
		}
	}
	return nil
}

func (rc recordClient) Create(ctx context.Context, inst *api.FuncInstance) error {
	item := *inst
	item.ResourceVersion, item.UID = "", ""
	_, err := rc.client.FuncInstances(inst.Namespace).Create(ctx, &item)
	return err
}

// markReady marks the HTTP triggers ready once this gateway serves them.
func (g *Gateway) markReady(ctx context.Context) {
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
