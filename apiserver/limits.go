package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage/etcd"
)

// Limits an open port needs: a body that trickles in is cut off, a request
// that cannot be answered (etcd without quorum) answers 503 within its
// timeout, and one client cannot hold more than its share of watches.

const (
	// DefaultRequestTimeout bounds a request that is not a watch, as
	// kube-apiserver's --request-timeout; ?timeout= asks for less.
	DefaultRequestTimeout = time.Minute
	// bodyBaseTime and bodyMinRate set how long a request body may take to
	// arrive: bodyBaseTime plus its length at bodyMinRate.
	bodyBaseTime = 10 * time.Second
	bodyMinRate  = 64 << 10 // bytes per second
)

// bodyDeadline cuts off a request whose body arrives too slowly (a client
// trickling a byte now and then holds a connection and a goroutine
// forever otherwise). The deadline covers the body only: once it is read,
// the handler may take as long as a call or a watch needs.
func bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		budget := bodyBaseTime
		if r.ContentLength > 0 {
			budget += time.Duration(r.ContentLength/bodyMinRate) * time.Second
		}
		start := time.Now()
		body := &deadlineBody{ReadCloser: r.Body, rc: http.NewResponseController(w), budget: budget}
		r.Body = body
		next.ServeHTTP(w, r)
		if !body.done {
			// The handler left (some of) the body unread, as a refusal
			// does: the server reads the rest before it answers, within
			// the same budget.
			_ = body.rc.SetReadDeadline(start.Add(budget))
		}
	})
}

type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	budget  time.Duration
	started bool
	done    bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		_ = b.rc.SetReadDeadline(time.Now().Add(b.budget))
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		// All read: the handler may take as long as it needs.
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// The deadline stays: the server answers and drops the connection.
		return n, fmt.Errorf("the request body did not arrive within %s: %w", b.budget, errdefs.ErrTimeout)
	}
	return n, err
}

// requestTimeout bounds every request but the long-running ones
// (request.longRunning): ?timeout= (a duration, as kubectl sends it) asks
// for less than the server's bound.
func (s *Server) requestTimeout() gin.HandlerFunc {
	return func(c *gin.Context) {
		req := requestOf(c)
		if req.longRunning(c.Request) {
			c.Next()
			return
		}
		d := s.cfg.RequestTimeout
		if t := req.timeout; t > 0 && t < d {
			d = t
		}
		// A synchronous function call waits as long as it asked to.
		if fr := req.fn; fr != nil && fr.wait+time.Minute > d {
			d = fr.wait + time.Minute
		}
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// clientOf names who a request comes from, for per-client limits: the
// user on the secure port, the address on the local port.
func clientOf(c *gin.Context) string {
	if u, ok := rbac.UserFrom(c.Request.Context()); ok && u.Name != localAdmin.Name {
		return "user " + u.Name
	}
	host, _, err := net.SplitHostPort(c.Request.RemoteAddr)
	if err != nil {
		return c.Request.RemoteAddr
	}
	return host
}

// health answers /healthz and /readyz: ok only while etcd answers (a
// member without a leader fails at once, see the store). /readyz fails
// too while etcd has an alarm raised, naming it: out of space (NOSPACE),
// etcd refuses every write. /healthz (and /livez) stay ok then, as
// Kubernetes' etcd check of them (a read) and etcd's own /livez do:
// reads are served, restarting the apiserver frees no space, and the
// apiserver recovers on its own once objects are deleted.
func (s *Server) health(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	check := c.Request.URL.Path[1:]
	if _, err := s.store.Revision(ctx); err != nil {
		c.String(http.StatusServiceUnavailable, "[-]etcd failed: %v\n%s check failed\n", err, check)
		return
	}
	if a, ok := s.store.(interface{ Alarms() etcd.Alarms }); ok && check == "readyz" {
		if alarms := a.Alarms(); len(alarms.Names) > 0 {
			c.String(http.StatusServiceUnavailable, "[-]etcd-alarms failed: %s\n%s check failed\n", alarms, check)
			return
		}
	}
	c.String(http.StatusOK, "ok")
}
