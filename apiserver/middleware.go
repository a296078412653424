package apiserver

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/audit"
	"minik8s/apiserver/auth"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage"
	"minik8s/pkg/storage/etcd"
)

var errNoRoute = fmt.Errorf("%w", errdefs.ErrNotFound)

// fail records err for errorMiddleware and stops the handler chain.
func fail(c *gin.Context, err error) {
	_ = c.Error(err)
	c.Abort()
}

// errorMiddleware is the one place errors become HTTP answers:
// {"error": ..., "reason": ..., "field": ...} with the class's status code.
func errorMiddleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		if len(c.Errors) == 0 || c.Writer.Written() {
			return
		}
		err := c.Errors.Last().Err
		code, reason := errdefs.HTTPStatus(err)
		if code >= 500 {
			log.WithError(err).WithField("path", c.Request.URL.Path).Error("request failed")
		}
		var tooLarge tooLargeResourceVersion
		// A budget's refusal has no time to give (kubectl drain retries
		// it on its own clock): no Retry-After, as in Kubernetes.
		if (code == http.StatusTooManyRequests && !errors.As(err, new(budgetRefused))) || errors.As(err, &tooLarge) {
			c.Header("Retry-After", "1")
		}
		st := api.Status{Error: keyless(err.Error()), Reason: reason, Field: errdefs.Field(err), Code: code}
		if requestOf(c).fn == nil && !isReferenceRoute(c.Request.URL.Path) {
			kubernetesStatus(&st, err, requestAttributes(c))
		}
		c.JSON(code, st)
	}
}

// keyless says "/registry/pods/default/web: not found" as Kubernetes
// does, `pods "web" not found`, wherever the key is in the message:
// storage keys are no business of clients.
func keyless(msg string) string {
	return storageKey.ReplaceAllString(msg, `$1 "$2" `)
}

// storageKey is a storage key followed by ": ": the resource, an optional
// namespace, and the name.
var storageKey = regexp.MustCompile(regexp.QuoteMeta(storage.KeyRoot) + `([a-z0-9.-]+)/(?:[^/:\s]+/)?([^/:\s]+): `)

// isReferenceRoute: the reference design's function API (/api/funcs...,
// /api/watch/funcs...), whose error answers keep its own format and whose
// requests are authorized as the function kinds' (funcAttributes).
func isReferenceRoute(path string) bool {
	for _, root := range []string{"/api/funcs", "/api/watch/funcs"} {
		if path == root || strings.HasPrefix(path, root+"/") {
			return true
		}
	}
	return false
}

// kubernetesStatus fills in what Kubernetes' Status has: kubectl prints
// `Error from server (NotFound): pods "web" not found` from it.
func kubernetesStatus(st *api.Status, err error, a rbac.Attributes) {
	st.TypeMeta = api.TypeMeta{Kind: "Status", APIVersion: "v1"}
	st.Status = "Failure"
	st.Message = keyless(err.Error())
	var tooLarge tooLargeResourceVersion
	if errors.As(err, &tooLarge) {
		// As client-go's reflectors recognize it: retry, or list again.
		st.Details = &api.StatusDetails{RetryAfterSeconds: 1,
			Causes: []api.StatusCause{{Type: "ResourceVersionTooLarge", Message: "Too large resource version"}}}
		return
	}
	if !a.ResourceRequest {
		return
	}
	var ref *auth.RefNotFound
	if errors.As(err, &ref) {
		st.Details = &api.StatusDetails{Name: ref.Name, Group: ref.Group, Kind: ref.Resource}
		return
	}
	st.Details = &api.StatusDetails{Name: a.Name, Group: a.APIGroup, Kind: a.Resource}
	// A log or exec may miss a container, not the pod: its own words.
	object := a.Subresource != "log" && a.Subresource != "exec" && a.Subresource != "portforward"
	switch {
	case object && a.Name != "" && errors.Is(err, errdefs.ErrNotFound):
		st.Message = fmt.Sprintf("%s %q not found", a.Resource, a.Name)
	case a.Name != "" && errors.Is(err, errdefs.ErrAlreadyExists):
		st.Message = fmt.Sprintf("%s %q already exists", a.Resource, a.Name)
	}
	if io, ok := errdefs.AsInvalidObject(err); ok {
		// As Kubernetes' NewInvalid: the kind, and every cause.
		st.Details.Name, st.Details.Group, st.Details.Kind = io.Name, io.Group, io.Kind
		st.Details.Causes = make([]api.StatusCause, len(io.Causes))
		for i, c := range io.Causes {
			st.Details.Causes[i] = api.StatusCause{Type: c.Type, Message: c.Message, Field: c.Field}
		}
		return
	}
	var refused budgetRefused
	if errors.As(err, &refused) {
		st.Details.Causes = []api.StatusCause{{Type: "DisruptionBudget", Message: refused.cause}}
		return
	}
	if st.Field != "" {
		st.Details.Causes = []api.StatusCause{{Type: "Field" + st.Reason, Message: err.Error(), Field: st.Field}}
	}
}

// bodyLimit caps request bodies; decodeBody turns the overflow into 413.
// A runner's write of an instance's status, and its create of the record of
// a trigger's call, carry the argument, the result and step records, each
// up to its own limit: they may take up to what etcd takes in one request.
func (s *Server) bodyLimit() gin.HandlerFunc {
	return func(c *gin.Context) {
		limit := s.cfg.MaxBodyBytes
		if takesRecords(requestOf(c)) {
			limit = max(limit, etcd.MaxRequestBytes)
		}
		if c.Request.ContentLength > limit {
			fail(c, tooLarge(limit))
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
		c.Next()
	}
}

// takesRecords: a runner's write of an instance's status, or its create
// of a record (REST routes of funcinstances, not the function API).
func takesRecords(req *request) bool {
	a := req.attrs
	if req.fn != nil || !a.ResourceRequest || a.Resource != api.FuncInstancesResource.Name {
		return false
	}
	return (a.Subresource == "status" && a.Verb == "update") || (a.Subresource == "" && a.Verb == "create")
}

func tooLarge(limit int64) error {
	return fmt.Errorf("request body is larger than the limit of %d bytes: %w", limit, errdefs.ErrTooLarge)
}

func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

func (s *Server) logMiddleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		failed := c.Writer.Status() >= 500
		if !failed && !log.IsLevelEnabled(log.DebugLevel) {
			return // no fields to build on the hot path
		}
		entry := log.WithFields(log.Fields{
			"method": c.Request.Method, "path": c.Request.URL.Path,
			"status": c.Writer.Status(), "duration": time.Since(start).Round(time.Microsecond),
		})
		if failed {
			entry.Warn("request")
		} else {
			entry.Debug("request")
		}
	}
}

func (s *Server) metricsMiddleware() gin.HandlerFunc {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_requests_total", Help: "HTTP requests by method, route and status code.",
	}, []string{"method", "route", "code"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "apiserver_request_duration_seconds", Help: "HTTP request latency by method and route (watches excluded).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"method", "route"})
	watches := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "apiserver_watches", Help: "Watch streams open now.",
	})
	s.metrics.MustRegister(requests, latency, watches)
	return func(c *gin.Context) {
		start := time.Now()
		watching := requestOf(c).watching()
		if watching {
			watches.Inc()
			defer watches.Dec()
		}
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		requests.WithLabelValues(c.Request.Method, route, strconv.Itoa(c.Writer.Status())).Inc()
		if !watching {
			latency.WithLabelValues(c.Request.Method, route).Observe(time.Since(start).Seconds())
		}
	}
}

// isWrite tells whether a request changes something.
func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// auditMiddleware logs each write once answered, with the user the
// authenticator found (none for a 401).
func (s *Server) auditMiddleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.audit == nil || !isWrite(c.Request.Method) {
			c.Next()
			return
		}
		received := time.Now().UTC()
		c.Next()
		// As read once for authorization (a 401 has them too).
		attrs := requestAttributes(c)
		ev := &audit.Event{Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: "Metadata", AuditID: uuid.NewString(),
			Stage: "ResponseComplete", RequestURI: c.Request.URL.RequestURI(), Verb: attrs.Verb,
			UserAgent: c.Request.UserAgent(), RequestReceivedTimestamp: received, StageTimestamp: time.Now().UTC()}
		if u, ok := rbac.UserFrom(c.Request.Context()); ok {
			ev.User = audit.User{Username: u.Name, Groups: u.Groups}
		}
		if host, _, err := net.SplitHostPort(c.Request.RemoteAddr); err == nil {
			ev.SourceIPs = []string{host}
		}
		if attrs.ResourceRequest {
			ev.ObjectRef = &audit.ObjectRef{Resource: attrs.Resource, Namespace: attrs.Namespace, Name: attrs.Name,
				APIGroup: attrs.APIGroup, Subresource: attrs.Subresource}
		}
		ev.ResponseStatus.Code = c.Writer.Status()
		s.audit.Write(ev)
	}
}
