package funcrunner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/egress"
	"minik8s/pkg/function"
)

// Callback delivery defaults: OpenFaaS's queue worker retries a few times
// with a growing pause; a dead receiver must not hold a runner for long.
const (
	DefaultCallbackTimeout  = 10 * time.Second
	DefaultCallbackAttempts = 5
	DefaultCallbackBackoff  = 200 * time.Millisecond
)

// callbacks POSTs ended instances' outcomes to their X-Callback-Url.
type callbacks struct {
	guard  *egress.Guard
	client *http.Client
	// timeout bounds one attempt; attempts is the most POSTs per instance;
	// backoff is the pause after the first failure, doubled after each.
	timeout  time.Duration
	attempts int
	backoff  time.Duration
}

// newCallbacks delivers through guard: the URL is the caller's, so the
// POST may reach only addresses that do not trust the platform (the
// local port acts as the admin), redirects are not followed and no proxy
// dials in the guard's place.
func newCallbacks(guard *egress.Guard) *callbacks {
	return &callbacks{
		guard:    guard,
		client:   guard.Client(),
		timeout:  DefaultCallbackTimeout,
		attempts: DefaultCallbackAttempts,
		backoff:  DefaultCallbackBackoff,
	}
}

// deliver POSTs the ended instance's outcome to inst.Spec.CallbackURL,
// retrying connection errors, 5xx and 429; any other 4xx is final. It
// returns what to store in inst.Status.Callback; when ctx ends it stops and
// returns what was reached.
func (cb *callbacks) deliver(ctx context.Context, inst *api.FuncInstance) api.FuncCallbackStatus {
	var st api.FuncCallbackStatus
	if inst.Spec.CallbackURL == "" {
		st.Error = "no callback URL"
		return st
	}
	if err := cb.checkURL(inst.Spec.CallbackURL); err != nil {
		now := time.Now().UTC()
		st.Time, st.Error = &now, "callback refused: "+err.Error()
		logRefused(inst, st.Error)
		return st
	}
	body, headers := callbackMessage(inst)
	pause := cb.backoff
	for st.Attempts < max(cb.attempts, 1) {
		st.Attempts++
		code, err := cb.post(ctx, inst.Spec.CallbackURL, body, headers)
		now := time.Now().UTC()
		st.Time, st.StatusCode = &now, code
		retry := false
		switch {
		case err != nil && isRefused(err):
			// Final: the address will not change its nature by a retry.
			st.Error = "callback refused: " + err.Error()
			logRefused(inst, st.Error)
			return st
		case err != nil:
			st.Error, retry = err.Error(), true
		case code >= 200 && code < 300:
			st.Delivered, st.Error = true, ""
			return st
		default:
			st.Error = fmt.Sprintf("callback answered %d %s", code, http.StatusText(code))
			retry = code >= 500 || code == http.StatusTooManyRequests
		}
		if !retry || st.Attempts >= cb.attempts {
			break
		}
		// A cancel that came while the attempt was answered ends the
		// wait at once and is said in the status, as one during it.
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		if ctx.Err() != nil {
			st.Error = fmt.Sprintf("%s (then stopped: %v)", st.Error, ctx.Err())
			break
		}
		pause *= 2
	}
	log.WithFields(log.Fields{"instance": inst.Name, "url": inst.Spec.CallbackURL,
		"attempts": st.Attempts, "error": st.Error}).Warn("callback not delivered")
	return st
}

// checkURL refuses, before any attempt, a URL that is not http(s), has
// user info or names an address the guard refuses (one stored before the
// apiserver checked callback URLs, or by a writer that skipped the
// check). Names are left to the dial, where the guard sees what they
// resolve to.
func (cb *callbacks) checkURL(raw string) error {
	u, err := egress.ParseURL(raw)
	if err != nil {
		return err
	}
	return cb.guard.CheckHost(u.Hostname())
}

func isRefused(err error) bool {
	_, ok := egress.Refused(err)
	return ok
}

func logRefused(inst *api.FuncInstance, msg string) {
	log.WithFields(log.Fields{"instance": inst.Namespace + "/" + inst.Name, "user": inst.Spec.User,
		"url": inst.Spec.CallbackURL}).Warn(msg)
}

// post makes one attempt; it returns the answer's status code, or an error
// when there was no answer.
func (cb *callbacks) post(ctx context.Context, url, body string, headers http.Header) (int, error) {
	actx, cancel := context.WithTimeout(ctx, cb.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("callback request: %w", err)
	}
	req.Header = headers.Clone()
	resp, err := cb.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("callback post: %w", err)
	}
	// Drain a little so the connection can be reused; the answer's body
	// carries nothing we keep.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// callbackMessage builds the POST as OpenFaaS's queue worker does: the raw
// result on success, the error message otherwise, and the call's identity
// and outcome in X- headers.
func callbackMessage(inst *api.FuncInstance) (string, http.Header) {
	body, status := string(inst.Status.Result), http.StatusOK
	if inst.Status.Phase != api.InstanceSucceeded {
		body, status = inst.Status.Error, http.StatusInternalServerError
	}
	h := http.Header{}
	h.Set("Content-Type", "application/octet-stream")
	if inst.Spec.CallbackEvent {
		if ev, err := function.OutcomeEvent(inst, "/api/funcs/"+inst.Spec.Function); err == nil {
			body = string(ev)
			h.Set("Content-Type", function.ContentTypeCloudEvent)
		}
	}
	h.Set("X-Call-Id", inst.Name)
	h.Set("X-Function-Name", inst.Spec.Function)
	h.Set("X-Function-Status", strconv.Itoa(status))
	if c, e := inst.CreationTimestamp, inst.Status.CompletionTime; c != nil && e != nil {
		h.Set("X-Duration-Seconds", strconv.FormatFloat(e.Sub(*c).Seconds(), 'f', 6, 64))
	}
	return body, h
}
