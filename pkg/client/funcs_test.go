package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// seen is one request the fake apiserver got.
type seen struct {
	method, path, query, contentType, callback, body string
}

// fakeFuncAPI answers every request with code and body and records it.
func fakeFuncAPI(t *testing.T, code int, body string) (*Client, func() seen) {
	t.Helper()
	var mu sync.Mutex
	var last seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get(CallbackHeader), string(data)}
		mu.Unlock()
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return New(srv.URL), func() seen {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

const finishedView = `{"instanceId":"id-1","function":"hello","status":"Succeeded","result":"HELLO","steps":[{"function":"hello","arg":"hello","result":"HELLO","durationMs":3,"runMs":1}]}`

func TestFuncCalls(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		code      int
		answer    string
		call      func(*Client) (*api.FuncInstanceView, error)
		want      seen
		wantView  *api.FuncInstanceView
		wantErr   func(error) bool
		wantText  string
		wantClass string // StatusError.Reason
	}{
		{
			name: "invoke waits and gets the finished view", code: 200, answer: finishedView,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("").Invoke(ctx, "hello", []byte("hello"), InvokeOptions{Wait: 30 * time.Second})
			},
			want: seen{method: "POST", path: "/api/funcs/hello", query: "namespace=default&wait=30s", contentType: "application/octet-stream", body: "hello"},
			wantView: &api.FuncInstanceView{InstanceID: "id-1", Function: "hello", Status: "Succeeded", Result: "HELLO",
				Steps: []api.FuncStepRecord{{Function: "hello", Arg: "hello", Result: "HELLO", DurationMs: 3, RunMs: 1}}},
		},
		{
			name: "invoke without wait gets 202 and the id", code: 202, answer: `{"instanceId":"id-2","status":"Pending"}`,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("team").Invoke(ctx, "hello", nil, InvokeOptions{CallbackURL: "http://127.0.0.1:9/cb", ContentType: "text/plain"})
			},
			want:     seen{method: "POST", path: "/api/funcs/hello", query: "namespace=team", contentType: "text/plain", callback: "http://127.0.0.1:9/cb"},
			wantView: &api.FuncInstanceView{InstanceID: "id-2", Status: "Pending"},
		},
		{
			name: "a wait that ran out is a 202 too", code: 202, answer: `{"instanceId":"id-3","status":"Running"}`,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("default").Invoke(ctx, "slow fn", []byte("x"), InvokeOptions{Wait: 1500 * time.Millisecond})
			},
			want:     seen{method: "POST", path: "/api/funcs/slow fn", query: "namespace=default&wait=1.5s", contentType: "application/octet-stream", body: "x"},
			wantView: &api.FuncInstanceView{InstanceID: "id-3", Status: "Running"},
		},
		{
			name: "invoke of an unknown function", code: 404,
			answer: `{"error":"function \"nobody\" not found in namespace \"default\": not found","reason":"NotFound","code":404}`,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("").Invoke(ctx, "nobody", []byte("x"), InvokeOptions{})
			},
			want:    seen{method: "POST", path: "/api/funcs/nobody", query: "namespace=default", contentType: "application/octet-stream", body: "x"},
			wantErr: errdefs.IsNotFound, wantClass: "NotFound", wantText: `function "nobody" not found in namespace "default": not found`,
		},
		{
			name: "an argument too large", code: 413,
			answer: `{"error":"the argument is larger than 524288 bytes: request entity too large","reason":"RequestEntityTooLarge","code":413}`,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("").Invoke(ctx, "hello", []byte("big"), InvokeOptions{Wait: time.Minute})
			},
			want:    seen{method: "POST", path: "/api/funcs/hello", query: "namespace=default&wait=1m0s", contentType: "application/octet-stream", body: "big"},
			wantErr: errdefs.IsTooLarge, wantClass: "RequestEntityTooLarge",
		},
		{
			name: "a bad wait", code: 400,
			answer: `{"error":"11m0s is not between 0 and 10m0s: bad request","reason":"BadRequest","field":"wait","code":400}`,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("").Invoke(ctx, "hello", nil, InvokeOptions{Wait: 11 * time.Minute})
			},
			want:    seen{method: "POST", path: "/api/funcs/hello", query: "namespace=default&wait=11m0s", contentType: "application/octet-stream"},
			wantErr: func(err error) bool { return errdefs.Field(err) == "wait" }, wantClass: "BadRequest",
		},
		{
			name: "an answer that is not a view", code: 200, answer: `<html>proxy</html>`,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("").Invoke(ctx, "hello", nil, InvokeOptions{})
			},
			want:     seen{method: "POST", path: "/api/funcs/hello", query: "namespace=default", contentType: "application/octet-stream"},
			wantErr:  func(err error) bool { return err != nil },
			wantText: `calling "hello": unexpected answer "<html>proxy</html>"`,
		},
		{
			name: "an answer without an instance id", code: 202, answer: `{"status":"Running"}`,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("").Step(ctx, "double", "id-1", nil, InvokeOptions{})
			},
			want:     seen{method: "PUT", path: "/api/funcs/double/id-1", query: "namespace=default", contentType: "application/octet-stream"},
			wantErr:  func(err error) bool { return err != nil },
			wantText: `running "double" as the next step of "id-1": unexpected answer "{\"status\":\"Running\"}"`,
		},
		{
			name: "step of a running instance", code: 202, answer: `{"instanceId":"id-1","status":"Running"}`,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("team").Step(ctx, "double", "id-1", []byte("21"), InvokeOptions{})
			},
			want:     seen{method: "PUT", path: "/api/funcs/double/id-1", query: "namespace=team", contentType: "application/octet-stream", body: "21"},
			wantView: &api.FuncInstanceView{InstanceID: "id-1", Status: "Running"},
		},
		{
			name: "step of a finished instance", code: 409,
			answer: `{"error":"function instance \"id-1\" has ended (Succeeded): a finished instance cannot be changed: conflict","reason":"Conflict","code":409}`,
			call: func(c *Client) (*api.FuncInstanceView, error) {
				return c.FuncCalls("").Step(ctx, api.FuncReturn, "id-1", []byte("late"), InvokeOptions{Wait: 5 * time.Second})
			},
			want:    seen{method: "PUT", path: "/api/funcs/RETURN/id-1", query: "namespace=default&wait=5s", contentType: "application/octet-stream", body: "late"},
			wantErr: errdefs.IsConflict, wantClass: "Conflict",
		},
		{
			name: "result", code: 200, answer: finishedView,
			call: func(c *Client) (*api.FuncInstanceView, error) { return c.FuncCalls("team").Result(ctx, "id-1") },
			want: seen{method: "GET", path: "/api/funcs/id-1", query: "namespace=team"},
			wantView: &api.FuncInstanceView{InstanceID: "id-1", Function: "hello", Status: "Succeeded", Result: "HELLO",
				Steps: []api.FuncStepRecord{{Function: "hello", Arg: "hello", Result: "HELLO", DurationMs: 3, RunMs: 1}}},
		},
		{
			name: "result of an expired instance", code: 404,
			answer:  `{"error":"function instance \"old\" not found (unknown, or expired): not found","reason":"NotFound","code":404}`,
			call:    func(c *Client) (*api.FuncInstanceView, error) { return c.FuncCalls("").Result(ctx, "old") },
			want:    seen{method: "GET", path: "/api/funcs/old", query: "namespace=default"},
			wantErr: errdefs.IsNotFound, wantClass: "NotFound",
		},
		{
			name: "a plain-text answer", code: 502, answer: "bad gateway\n",
			call:    func(c *Client) (*api.FuncInstanceView, error) { return c.FuncCalls("").Result(ctx, "id-1") },
			want:    seen{method: "GET", path: "/api/funcs/id-1", query: "namespace=default"},
			wantErr: func(err error) bool { return err != nil }, wantClass: "InternalError", wantText: "bad gateway",
		},
		{
			name: "an empty error answer", code: 503,
			call:    func(c *Client) (*api.FuncInstanceView, error) { return c.FuncCalls("").Result(ctx, "id-1") },
			want:    seen{method: "GET", path: "/api/funcs/id-1", query: "namespace=default"},
			wantErr: func(err error) bool { return errors.Is(err, errdefs.ErrUnavailable) }, wantClass: "ServiceUnavailable", wantText: "Service Unavailable",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, last := fakeFuncAPI(t, tc.code, tc.answer)
			v, err := tc.call(c)
			if got := last(); got != tc.want {
				t.Errorf("request %+v\nwant    %+v", got, tc.want)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if !viewsEqual(v, tc.wantView) {
					t.Errorf("view %+v, want %+v", v, tc.wantView)
				}
				return
			}
			if err == nil || !tc.wantErr(err) || v != nil {
				t.Fatalf("view %+v, error %#v: not the error wanted", v, err)
			}
			if tc.wantText != "" && err.Error() != tc.wantText {
				t.Errorf("error %q, want %q", err.Error(), tc.wantText)
			}
			var se *StatusError
			if tc.wantClass != "" && (!errors.As(err, &se) || se.Reason != tc.wantClass || se.Code != tc.code) {
				t.Errorf("error %#v: want a StatusError %d %s", err, tc.code, tc.wantClass)
			}
		})
	}
}

func viewsEqual(a, b *api.FuncInstanceView) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestFuncAnswerBound: a view larger than the bound is refused, not read
// into memory whole; one within it is read.
func TestFuncAnswerBound(t *testing.T) {
	old := funcAnswerLimit
	funcAnswerLimit = 1 << 20
	t.Cleanup(func() { funcAnswerLimit = old })
	for _, tc := range []struct {
		size    int
		tooLong bool
	}{{1<<20 - 100, false}, {1<<20 + 1, true}, {8 << 20, true}} {
		t.Run(fmt.Sprint(tc.size), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				head := `{"instanceId":"id-1","result":"`
				io.WriteString(w, head+strings.Repeat("x", tc.size-len(head)-2)+`"}`)
			}))
			defer srv.Close()
			v, err := New(srv.URL).FuncCalls("").Result(context.Background(), "id-1")
			if tc.tooLong != errdefs.IsTooLarge(err) || (!tc.tooLong && (err != nil || v.InstanceID != "id-1")) {
				t.Fatalf("%d bytes: view %v, error %v", tc.size, v != nil, err)
			}
		})
	}
}

func TestFuncCallsTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := New(url).FuncCalls("").Invoke(context.Background(), "hello", nil, InvokeOptions{})
	var te *TransportError
	if !errors.As(err, &te) || te.Server != url || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("error %#v, want a TransportError of %s", err, url)
	}
}

func TestFuncTemplates(t *testing.T) {
	ctx := context.Background()
	f := &api.Func{ObjectMeta: api.ObjectMeta{Name: "hello"}, Spec: api.FuncSpec{Name: "hello", Function: "cHJpbnQ="}}
	for _, tc := range []struct {
		name string
		code int
		call func(*FuncTemplates) error
		want seen
		err  func(error) bool
	}{
		{"get", 200, func(t *FuncTemplates) error { _, err := t.Get(ctx, "hello"); return err },
			seen{method: "GET", path: "/api/funcs/template/hello", query: "namespace=team"}, nil},
		{"create", 201, func(t *FuncTemplates) error { _, err := t.Create(ctx, f); return err },
			seen{method: "POST", path: "/api/funcs/template", query: "namespace=team", contentType: "application/json", body: mustJSON(f)}, nil},
		{"update", 200, func(t *FuncTemplates) error { _, err := t.Update(ctx, f); return err },
			seen{method: "PUT", path: "/api/funcs/template/hello", query: "namespace=team", contentType: "application/json", body: mustJSON(f)}, nil},
		{"delete", 200, func(t *FuncTemplates) error { return t.Delete(ctx, "hello") },
			seen{method: "DELETE", path: "/api/funcs/template/hello", query: "namespace=team"}, nil},
		{"create twice", 409, func(t *FuncTemplates) error { _, err := t.Create(ctx, f); return err },
			seen{method: "POST", path: "/api/funcs/template", query: "namespace=team", contentType: "application/json", body: mustJSON(f)},
			errdefs.IsAlreadyExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := mustJSON(f)
			if tc.err != nil {
				answer = `{"error":"func \"hello\" already exists: already exists","reason":"AlreadyExists","code":409}`
			}
			c, last := fakeFuncAPI(t, tc.code, answer)
			err := tc.call(c.FuncTemplates("team"))
			if got := last(); got != tc.want {
				t.Errorf("request %+v\nwant    %+v", got, tc.want)
			}
			if (tc.err == nil && err != nil) || (tc.err != nil && !tc.err(err)) {
				t.Errorf("error %v", err)
			}
		})
	}
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}
