package mkctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
)

// funcAPI speaks the function API of the reference design under /api/funcs,
// which the typed client does not cover: raw argument bodies, ?wait= and
// 202 answers.
type funcAPI struct {
	base string
	ns   string
	http *http.Client
}

// requestTimeout bounds a request that does not wait for a call.
const requestTimeout = 60 * time.Second

func (o *Options) funcAPI() *funcAPI {
	return &funcAPI{
		base: o.Client().Server(),
		ns:   o.Namespace,
		http: &http.Client{Transport: &http.Transport{
			Proxy:       nil, // cluster traffic never goes through a proxy
			DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		}},
	}
}

// serverError is an error answer: printed as the apiserver's (through
// client.StatusError) and classed as errdefs says (errdefs.IsNotFound).
type serverError struct {
	status *client.StatusError
	class  error
}

func (e *serverError) Error() string   { return e.status.Message }
func (e *serverError) Unwrap() []error { return []error{e.status, e.class} }

// do sends body to path (with the namespace and query) and returns the
// status code and body of a 2xx answer.
func (a *funcAPI) do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) (int, []byte, error) {
	if query == nil {
		query = url.Values{}
	}
	query.Set("namespace", a.ns)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path+"?"+query.Encode(), rd)
	if err != nil {
		return 0, nil, fmt.Errorf("building request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, nil, &client.TransportError{Server: a.base, Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, &client.TransportError{Server: a.base, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return 0, nil, answerError(resp.StatusCode, data)
	}
	return resp.StatusCode, data, nil
}

func answerError(code int, data []byte) error {
	var st api.Status
	msg := strings.TrimSpace(string(data))
	if err := json.Unmarshal(data, &st); err == nil && st.Error != "" {
		msg = st.Error
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	remote := errdefs.FromHTTP(code, st.Reason, st.Field, msg)
	_, reason := errdefs.HTTPStatus(remote)
	return &serverError{
		status: &client.StatusError{Code: code, Reason: reason, Field: st.Field, Message: msg},
		class:  remote,
	}
}

func (a *funcAPI) jsonDo(ctx context.Context, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encoding request: %w", err)
		}
	}
	_, data, err := a.do(ctx, method, path, nil, body, "application/json")
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

func templatePath(name string) string {
	if name == "" {
		return "/api/funcs/" + api.FuncTemplate
	}
	return "/api/funcs/" + api.FuncTemplate + "/" + url.PathEscape(name)
}

func (a *funcAPI) getTemplate(ctx context.Context, name string) (*api.Func, error) {
	f := &api.Func{}
	return f, a.jsonDo(ctx, http.MethodGet, templatePath(name), nil, f)
}

func (a *funcAPI) createTemplate(ctx context.Context, f *api.Func) (*api.Func, error) {
	out := &api.Func{}
	return out, a.jsonDo(ctx, http.MethodPost, templatePath(""), f, out)
}

func (a *funcAPI) updateTemplate(ctx context.Context, f *api.Func) (*api.Func, error) {
	out := &api.Func{}
	return out, a.jsonDo(ctx, http.MethodPut, templatePath(f.Name), f, out)
}

func (a *funcAPI) deleteTemplate(ctx context.Context, name string) error {
	return a.jsonDo(ctx, http.MethodDelete, templatePath(name), nil, nil)
}

// call starts a call of fn with the raw argument. With wait > 0 the
// apiserver holds the answer until the instance ends or wait passes; the
// view's status says which.
func (a *funcAPI) call(ctx context.Context, fn string, arg []byte, wait time.Duration) (api.FuncInstanceView, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+requestTimeout)
	defer cancel()
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	if arg == nil {
		arg = []byte{}
	}
	// The reference scripts post with curl --data: the body is raw bytes
	// whatever the type says.
	_, data, err := a.do(ctx, http.MethodPost, "/api/funcs/"+url.PathEscape(fn), q, arg, "application/octet-stream")
	if err != nil {
		return api.FuncInstanceView{}, err
	}
	var v api.FuncInstanceView
	if err := json.Unmarshal(data, &v); err != nil || v.InstanceID == "" {
		return api.FuncInstanceView{}, fmt.Errorf("calling %q: unexpected answer %q", fn, truncate(string(data), 200))
	}
	if v.Function == "" {
		v.Function = fn
	}
	return v, nil
}

// instance reads the view of instance id.
func (a *funcAPI) instance(ctx context.Context, id string) (api.FuncInstanceView, error) {
	var v api.FuncInstanceView
	err := a.jsonDo(ctx, http.MethodGet, "/api/funcs/"+url.PathEscape(id), nil, &v)
	return v, err
}

func finished(v api.FuncInstanceView) bool {
	return v.Status == api.InstanceSucceeded || v.Status == api.InstanceFailed
}
