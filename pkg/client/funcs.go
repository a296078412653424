package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// The function API of the reference design lives under /api/funcs: raw
// argument bodies, ?wait= and 202 answers, which the REST clients do not
// speak. Its error answers come back as *StatusError and failures to reach
// the apiserver as *TransportError, both of the errdefs classes.

const (
	funcsPath = "/api/funcs/"
	// CallbackHeader names the URL the result of a call is POSTed to.
	CallbackHeader = "X-Callback-Url"
	// MaxFuncAnswerBytes bounds an answer of the function API: a result is
	// at most 512 KiB, but a view carries every step's argument, result and
	// output.
	MaxFuncAnswerBytes = 64 << 20
	// funcRequestTimeout bounds a request beyond the wait it asks for.
	funcRequestTimeout = 60 * time.Second
)

// funcAnswerLimit is MaxFuncAnswerBytes, a variable for tests.
var funcAnswerLimit int64 = MaxFuncAnswerBytes

// followRecheck is how often Follow reads the view even when the watch says
// nothing, in case the watch is down (a variable for tests).
var followRecheck = 2 * time.Second

// FuncCalls calls the functions of one namespace and reads their instances.
type FuncCalls struct {
	c  *Client
	ns string
}

// FuncCalls returns the function-call client of namespace ns ("" is default).
func (c *Client) FuncCalls(ns string) *FuncCalls {
	if ns == "" {
		ns = api.DefaultNamespace
	}
	return &FuncCalls{c: c, ns: ns}
}

// FuncCallsByID reads instances by id alone: the apiserver finds the
// namespace that holds one (ids are unique), among those the caller may
// read; the view says which (Namespace). Calls it makes go to default.
func (c *Client) FuncCallsByID() *FuncCalls { return &FuncCalls{c: c} }

// InvokeOptions tune a call.
type InvokeOptions struct {
	// Wait > 0 asks the apiserver to hold the answer until the call ends or
	// Wait passes; 0 answers at once with the instance id.
	Wait time.Duration
	// CallbackURL, when set, is where the result is POSTed once the
	// instance ends (the X-Callback-Url header).
	CallbackURL string
	// ContentType of the argument (default application/octet-stream); the
	// apiserver takes the body as raw bytes whatever it says.
	ContentType string
	// Header is sent with the call: Ce-* headers make it a CloudEvent in
	// binary mode, the argument its data.
	Header http.Header
}

// Invoke calls function name with the raw argument arg. With Wait it
// returns the finished view when the call ended in time; else (202) a view
// with InstanceID and Status only.
func (f *FuncCalls) Invoke(ctx context.Context, name string, arg []byte, opts InvokeOptions) (*api.FuncInstanceView, error) {
	data, err := f.c.funcDo(ctx, f.ns, funcRequest{
		method: http.MethodPost, path: funcsPath + url.PathEscape(name),
		body: argBody(arg), contentType: opts.ContentType, callbackURL: opts.CallbackURL, wait: opts.Wait, header: opts.Header,
	})
	if err != nil {
		return nil, err
	}
	return decodeCallAnswer(data, fmt.Sprintf("calling %q", name))
}

// Step runs function name with arg as the next step of instance id, the
// reference design's internal step call (name RETURN stores arg as the
// result). It answers as Invoke; a finished instance is a conflict.
func (f *FuncCalls) Step(ctx context.Context, name, id string, arg []byte, opts InvokeOptions) (*api.FuncInstanceView, error) {
	data, err := f.c.funcDo(ctx, f.ns, funcRequest{
		method: http.MethodPut, path: funcsPath + url.PathEscape(name) + "/" + url.PathEscape(id),
		body: argBody(arg), contentType: opts.ContentType, callbackURL: opts.CallbackURL, wait: opts.Wait,
	})
	if err != nil {
		return nil, err
	}
	return decodeCallAnswer(data, fmt.Sprintf("running %q as the next step of %q", name, id))
}

// Result reads the view of instance id; NotFound when it is unknown or
// has expired.
func (f *FuncCalls) Result(ctx context.Context, id string) (*api.FuncInstanceView, error) {
	v := &api.FuncInstanceView{}
	if err := f.c.funcJSON(ctx, f.ns, funcRequest{method: http.MethodGet, path: funcsPath + url.PathEscape(id)}, v); err != nil {
		return nil, err
	}
	return v, nil
}

// Wait returns the view once the instance has ended (Succeeded/Failed),
// following it by watch (reconnecting) and reading the view by GET; ctx
// bounds it.
func (f *FuncCalls) Wait(ctx context.Context, id string) (*api.FuncInstanceView, error) {
	return f.Follow(ctx, id, nil)
}

// Follow is Wait telling fn (when not nil) of every view it reads on the
// way, the first at once: a caller shows progress by them. It reads the
// view when the watch of the instance reports a change, and every few
// seconds in case the watch is down. The apiserver being unreachable does
// not end it (the last such error is returned when ctx ends); any other
// error answer (NotFound: the instance expired) does.
func (f *FuncCalls) Follow(ctx context.Context, id string, fn func(*api.FuncInstanceView)) (*api.FuncInstanceView, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Watching before the first read: a change between the two still
	// shows as an event (the watch lists first).
	events := f.WatchInstances(wctx, ListOptions{FieldSelector: "metadata.name=" + id})
	tick := time.NewTicker(followRecheck)
	defer tick.Stop()
	var lastErr error
	for {
		v, err := f.Result(ctx, id)
		switch {
		case err == nil:
			lastErr = nil
			if fn != nil {
				fn(v)
			}
			if ended(v) {
				return v, nil
			}
		case ctx.Err() != nil:
			return nil, followEnd(ctx, lastErr)
		case errors.Is(err, errdefs.ErrUnavailable):
			lastErr = err
			log.WithError(err).WithField("instance", id).Debug("function instance: read failed, retrying")
		default:
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, followEnd(ctx, lastErr)
		case _, ok := <-events:
			if !ok {
				events = nil
			}
			drain(events) // one read answers a burst of changes
		case <-tick.C:
		}
	}
}

// WatchInstances streams instance events (ListOptions as the REST watch:
// FieldSelector "spec.function=F" or "metadata.name=ID", say).
func (f *FuncCalls) WatchInstances(ctx context.Context, opts ListOptions) <-chan Event[*api.FuncInstance] {
	return f.c.FuncInstances(f.ns).Watch(ctx, opts)
}

// drain takes the events already queued, leaving a closed channel to the
// next receive.
func drain(events <-chan Event[*api.FuncInstance]) {
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// followEnd is the error of a Follow whose ctx ended: why the last read
// failed, if it did, else ctx's own.
func followEnd(ctx context.Context, lastErr error) error {
	if lastErr != nil {
		return lastErr
	}
	return ctx.Err()
}

func ended(v *api.FuncInstanceView) bool {
	return v.Status == api.InstanceSucceeded || v.Status == api.InstanceFailed
}

// argBody makes a missing argument an empty body, which is still sent.
func argBody(arg []byte) []byte {
	if arg == nil {
		return []byte{}
	}
	return arg
}

// decodeCallAnswer reads a 200 view or a 202 {"instanceId","status"}.
func decodeCallAnswer(data []byte, what string) (*api.FuncInstanceView, error) {
	v := &api.FuncInstanceView{}
	if err := json.Unmarshal(data, v); err != nil || v.InstanceID == "" {
		return nil, fmt.Errorf("%s: unexpected answer %q", what, clip(string(data), 200))
	}
	return v, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// FuncTemplates is CRUD on the function templates of one namespace through
// /api/funcs/template, as the reference design's scripts do it.
type FuncTemplates struct {
	c  *Client
	ns string
}

// FuncTemplates returns the template client of namespace ns ("" is default).
func (c *Client) FuncTemplates(ns string) *FuncTemplates {
	if ns == "" {
		ns = api.DefaultNamespace
	}
	return &FuncTemplates{c: c, ns: ns}
}

func templatePath(name string) string {
	if name == "" {
		return funcsPath + api.FuncTemplate
	}
	return funcsPath + api.FuncTemplate + "/" + url.PathEscape(name)
}

// List lists every function of the namespace with how it is reached and
// how it is doing (GET /api/funcs).
func (t *FuncTemplates) List(ctx context.Context) (*api.FuncSummaryList, error) {
	out := &api.FuncSummaryList{}
	return out, t.jsonDo(ctx, http.MethodGet, strings.TrimSuffix(funcsPath, "/"), nil, out)
}

// ListAllFuncs is List over every namespace (GET
// /api/funcs?allNamespaces=true), as kubectl get -A.
func (c *Client) ListAllFuncs(ctx context.Context) (*api.FuncSummaryList, error) {
	out := &api.FuncSummaryList{}
	if err := c.funcJSON(ctx, "", funcRequest{method: http.MethodGet, path: strings.TrimSuffix(funcsPath, "/"), allNamespaces: true}, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (t *FuncTemplates) Get(ctx context.Context, name string) (*api.Func, error) {
	out := &api.Func{}
	return out, t.jsonDo(ctx, http.MethodGet, templatePath(name), nil, out)
}

func (t *FuncTemplates) Create(ctx context.Context, f *api.Func) (*api.Func, error) {
	out := &api.Func{}
	return out, t.jsonDo(ctx, http.MethodPost, templatePath(""), f, out)
}

func (t *FuncTemplates) Update(ctx context.Context, f *api.Func) (*api.Func, error) {
	out := &api.Func{}
	return out, t.jsonDo(ctx, http.MethodPut, templatePath(f.Name), f, out)
}

func (t *FuncTemplates) Delete(ctx context.Context, name string) error {
	return t.jsonDo(ctx, http.MethodDelete, templatePath(name), nil, nil)
}

func (t *FuncTemplates) jsonDo(ctx context.Context, method, path string, in, out any) error {
	r := funcRequest{method: method, path: path}
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding request: %w", err)
		}
		r.body, r.contentType = data, "application/json"
	}
	return t.c.funcJSON(ctx, t.ns, r, out)
}

// funcJSON sends r in namespace ns and decodes the answer into out (nil:
// the answer is not read).
func (c *Client) funcJSON(ctx context.Context, ns string, r funcRequest, out any) error {
	data, err := c.funcDo(ctx, ns, r)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", r.method, r.path, err)
	}
	return nil
}

// funcRequest is one request of the function API.
type funcRequest struct {
	method, path string
	// allNamespaces asks for every namespace (?allNamespaces=true).
	allNamespaces bool
	body          []byte // nil: no body
	contentType   string
	callbackURL   string
	wait          time.Duration
	header        http.Header
}

// funcDo sends r in namespace ns and returns the body of a 2xx answer, read
// up to MaxFuncAnswerBytes. The request may take the wait it asks for and
// a minute more.
func (c *Client) funcDo(ctx context.Context, ns string, r funcRequest) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, r.wait+funcRequestTimeout)
	defer cancel()
	q := url.Values{}
	if ns != "" {
		q.Set("namespace", ns)
	}
	if r.allNamespaces {
		q.Set("allNamespaces", "true")
	}
	if r.wait > 0 {
		q.Set("wait", r.wait.String())
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path+"?"+q.Encode(), body)
	if err != nil {
		return nil, errdefs.BadRequest("", "building request: %v", err)
	}
	if r.body != nil {
		ct := r.contentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.callbackURL != "" {
		req.Header.Set(CallbackHeader, r.callbackURL)
	}
	req.Header.Set("Accept", "application/json")
	// The stream client: a waiting call may outlast the ordinary timeout.
	resp, err := c.stream.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &TransportError{Server: c.base, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return nil, funcAnswerError(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, funcAnswerLimit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: reading the answer: %w", r.method, r.path, ctx.Err())
		}
		return nil, &TransportError{Server: c.base, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if int64(len(data)) > funcAnswerLimit {
		return nil, fmt.Errorf("%s %s: the answer is larger than %d bytes: %w", r.method, r.path, funcAnswerLimit, errdefs.ErrTooLarge)
	}
	return data, nil
}

// funcAnswerError makes an error answer a *StatusError: the apiserver's
// Status when it sent one, else the body's text, else the code's name.
func funcAnswerError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var st api.Status
	msg := strings.TrimSpace(string(data))
	if err := json.Unmarshal(data, &st); err == nil && st.Error != "" {
		msg = st.Error
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	remote := errdefs.FromHTTP(resp.StatusCode, st.Reason, st.Field, msg)
	_, reason := errdefs.HTTPStatus(remote)
	return &StatusError{Code: resp.StatusCode, Reason: reason, Field: st.Field, Message: msg, err: remote}
}
