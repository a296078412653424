package tracing

import (
	"context"
	"fmt"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"minik8s/pkg/api"
)

// Exporter sends spans with OTLP over HTTP to an endpoint given as a base
// URL, as OTEL_EXPORTER_OTLP_ENDPOINT is: spans go to URL/v1/traces. It
// batches in the background; a nil Exporter drops everything (no endpoint).
type Exporter struct {
	exp   *otlptrace.Exporter
	spans chan api.FuncSpan
	res   map[string]*resource.Resource
}

const (
	exportQueue = 8192
	exportBatch = 512
	exportEvery = 200 * time.Millisecond
)

// NewExporter makes an exporter to endpoint; "" gives nil.
func NewExporter(ctx context.Context, endpoint string) (*Exporter, error) {
	if endpoint == "" {
		return nil, nil
	}
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, fmt.Errorf("--otlp-endpoint %q: want a base URL such as http://127.0.0.1:4318", endpoint)
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint %q: %w", endpoint, err)
	}
	return &Exporter{exp: exp, spans: make(chan api.FuncSpan, exportQueue), res: map[string]*resource.Resource{}}, nil
}

// Add queues spans; when the queue is full they are dropped, not waited for.
func (e *Exporter) Add(spans ...api.FuncSpan) {
	if e == nil {
		return
	}
	for _, s := range spans {
		select {
		case e.spans <- s:
		default:
			log.WithField("span", s.Name).Warn("tracing: export queue full, a span is dropped")
		}
	}
}

// Run sends the queued spans in batches until ctx ends, then what is left.
func (e *Exporter) Run(ctx context.Context) {
	if e == nil {
		return
	}
	tick := time.NewTicker(exportEvery)
	defer tick.Stop()
	var batch []api.FuncSpan
	flush := func(ctx context.Context) {
		if len(batch) == 0 {
			return
		}
		if err := e.exp.ExportSpans(ctx, e.stubs(batch)); err != nil {
			log.WithError(err).WithField("spans", len(batch)).Warn("tracing: exporting spans failed")
		}
		batch = batch[:0]
	}
	for {
		select {
		case s := <-e.spans:
			if batch = append(batch, s); len(batch) >= exportBatch {
				flush(ctx)
			}
		case <-tick.C:
			flush(ctx)
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			for len(e.spans) > 0 {
				batch = append(batch, <-e.spans)
			}
			flush(sctx)
			_ = e.exp.Shutdown(sctx)
			return
		}
	}
}

func (e *Exporter) stubs(spans []api.FuncSpan) []sdktrace.ReadOnlySpan {
	out := make([]sdktrace.ReadOnlySpan, 0, len(spans))
	for _, s := range spans {
		tid, err1 := trace.TraceIDFromHex(s.TraceID)
		sid, err2 := trace.SpanIDFromHex(s.SpanID)
		if err1 != nil || err2 != nil {
			continue
		}
		stub := tracetest.SpanStub{
			Name:        s.Name,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
			StartTime:   time.Unix(0, s.StartNs),
			EndTime:     time.Unix(0, s.EndNs),
			Resource:    e.resource(s.Service),
			Attributes:  []attribute.KeyValue{attribute.String("minik8s.component", s.Service)},
		}
		if s.ParentSpanID != "" {
			if pid, err := trace.SpanIDFromHex(s.ParentSpanID); err == nil {
				stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, TraceFlags: trace.FlagsSampled, Remote: true})
			}
		}
		if s.Error != "" {
			stub.Status = sdktrace.Status{Code: codes.Error, Description: s.Error}
		}
		out = append(out, stub.Snapshot())
	}
	return out
}

func (e *Exporter) resource(service string) *resource.Resource {
	if service == "" {
		service = "minik8s"
	}
	r, ok := e.res[service]
	if !ok {
		r = resource.NewSchemaless(attribute.String("service.name", "minik8s-"+service))
		e.res[service] = r
	}
	return r
}
