package funcserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/function"
)

func (s *server) handleInvoke(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	refuse := func(code int, typ, msg string) {
		s.rejected.Add(1)
		writeJSON(w, code, Response{Error: &Error{Type: typ, Message: msg}, Pod: s.cfg.PodName,
			DurationMs: time.Since(arrived).Milliseconds()})
	}
	timeout, err := s.callTimeout(r)
	if err != nil {
		refuse(http.StatusBadRequest, ErrorBadRequest, err.Error())
		return
	}
	ready, ok := s.enter()
	if !ok {
		refuse(http.StatusServiceUnavailable, ErrorUnavailable, "function not ready ("+ready.Status+"): "+ready.Reason)
		return
	}
	defer s.leave()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			refuse(http.StatusRequestEntityTooLarge, ErrorTooLarge,
				fmt.Sprintf("body: the argument is larger than %d bytes", s.cfg.MaxBodyBytes))
			return
		}
		refuse(http.StatusBadRequest, ErrorBadRequest, "body: "+err.Error())
		return
	}

	in, err := s.callInput(r, body)
	if err != nil {
		refuse(http.StatusBadRequest, ErrorBadRequest, err.Error())
		return
	}
	var stream *sendStream
	if r.Header.Get(function.HeaderSends) == function.SendsStream {
		stream = s.newSendStream(r.Context(), w)
		defer stream.close()
		in.send = stream.send
	}
	resp := s.call(r.Context(), in, arrived, timeout)
	resp.DurationMs = time.Since(arrived).Milliseconds()
	resp.Pod = s.cfg.PodName
	s.calls.Add(1)
	if resp.Error != nil {
		s.errors.Add(1)
	}
	log.WithFields(log.Fields{"durationMs": resp.DurationMs, "failed": resp.Error != nil}).Debug("call answered")
	if stream != nil {
		stream.finish(resp)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// callTimeout is the server's timeout or the request's override.
func (s *server) callTimeout(r *http.Request) (time.Duration, error) {
	v := r.Header.Get(HeaderTimeout)
	if v == "" {
		if fn := s.fn.Load(); fn != nil {
			return fn.timeout, nil
		}
		return s.cfg.Timeout, nil
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs <= 0 || math.IsInf(secs, 0) || math.IsNaN(secs) || secs > math.MaxInt64/float64(time.Second) {
		return 0, fmt.Errorf("header %s: want a positive number of seconds, got %q", HeaderTimeout, v)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// call runs one call on a free worker; the timeout counts from arrival.
func (s *server) call(ctx context.Context, in callInput, arrived time.Time, timeout time.Duration) Response {
	deadline := arrived.Add(timeout)
	pool := s.fn.Load().pool
	for {
		w, fail := s.acquire(ctx, pool, arrived, deadline, timeout)
		if fail != nil {
			return *fail
		}
		// Past this point the call runs to its answer or its deadline even
		// if the caller goes away: killing the worker would cost a re-import.
		queueMs := time.Since(arrived).Milliseconds()
		if rep, err := w.call(in, deadline); !errors.Is(err, errNotDelivered) {
			defer pool.release(w)
			return s.answer(w, rep, err, timeout, queueMs)
		}
		// It never ran: the next worker takes it, within the same deadline.
		log.WithFields(log.Fields{"pid": w.pid, "status": w.waitErr}).Warn("idle worker exited, replacing it; the call goes to another")
		pool.release(w)
	}
}

// acquire takes a free worker by the call's deadline, or says why not.
func (s *server) acquire(ctx context.Context, pool *pool, arrived, deadline time.Time, timeout time.Duration) (*worker, *Response) {
	qctx, cancel := context.WithDeadline(ctx, deadline)
	s.queued.Add(1)
	w, err := pool.acquire(qctx)
	s.queued.Add(-1)
	cancel()
	if err == nil && time.Now().Before(deadline) {
		return w, nil
	}
	if err == nil {
		// A worker came free as the deadline passed: a write bound by it
		// would fail at once and cost the worker.
		pool.release(w)
	}
	queueMs := time.Since(arrived).Milliseconds()
	if ctx.Err() != nil {
		// The caller went away; nobody reads this answer.
		return nil, &Response{QueueMs: queueMs, Error: &Error{Type: ErrorUnavailable, Message: "the caller went away while the call waited for a worker"}}
	}
	s.timeouts.Add(1)
	live, _ := pool.health()
	return nil, &Response{QueueMs: queueMs, Error: &Error{Type: ErrorTimeout,
		Message: fmt.Sprintf("no worker became free within the call's timeout of %s (%d of at most %d workers live, none free)", timeout, live, pool.size)}}
}

// answer is the response to a call w ran.
func (s *server) answer(w *worker, rep *reply, err error, timeout time.Duration, queueMs int64) Response {
	resp := Response{HasCheck: w.hasCheck, QueueMs: queueMs}
	var ce *callError
	switch {
	case err == nil:
		resp.Result, resp.Check, resp.Output, resp.Error = rep.Result, rep.Check, rep.Output, rep.Error
		resp.ResultType, resp.OutputDropped, resp.PluginErrors, resp.Spans = rep.ResultType, rep.OutputDropped, rep.PluginErrors, rep.Spans
		resp.Sends = rep.Sends
		if rep.Metrics != nil {
			observeRun(s.runs, rep.Metrics.Outcome, rep.Metrics.Seconds)
		}
	case errors.Is(err, errCallTimeout):
		s.timeouts.Add(1)
		log.WithFields(log.Fields{"pid": w.pid, "timeout": timeout}).Warn("call timed out, worker killed")
		resp.Error = &Error{Type: ErrorTimeout,
			Message: fmt.Sprintf("the call did not finish within its timeout of %s; its worker was killed and is replaced", timeout)}
	case errors.As(err, &ce):
		s.workerExits.Add(1)
		log.WithFields(log.Fields{"pid": w.pid, "status": w.waitErr}).Warn("worker exited during a call")
		resp.Error = &ce.Err
	default:
		resp.Error = &Error{Type: ErrorWorkerExited, Message: err.Error()}
	}
	return resp
}
