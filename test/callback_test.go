package test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// callbackPost is one POST a callback receiver got.
type callbackPost struct {
	body   string
	header http.Header
}

// callbackReceiverAddr is where the callback receivers of the tests
// listen: a loopback address that callbackAllow opens, as an operator
// opens a receiver with --egress-allow-cidrs 127.0.0.2/32. Everything
// else keeps the default refusals (127.0.0.1, where the local port is,
// among them).
const callbackReceiverAddr = "127.0.0.2"

var callbackAllow = []netip.Prefix{netip.MustParsePrefix(callbackReceiverAddr + "/32")}

// startCallbackCluster starts an apiserver and a function runner that
// both open callbackAllow, and nothing more.
func startCallbackCluster(t *testing.T) *framework.APIServer {
	t.Helper()
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) { c.EgressAllowCIDRs = callbackAllow })
	framework.StartFuncRunnerWith(t, s, func(c *funcrunner.Config) { c.EgressAllow = callbackAllow })
	return s
}

// callbackReceiver is an httptest server on callbackReceiverAddr that
// answers each POST with the next of codes (200 once they run out) and
// records it.
type callbackReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	codes []int
	posts []callbackPost
	got   chan struct{} // signalled on each 2xx answer
}

func newCallbackReceiver(t *testing.T, codes ...int) *callbackReceiver {
	r := &callbackReceiver{codes: codes, got: make(chan struct{}, 16)}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.posts = append(r.posts, callbackPost{body: string(body), header: req.Header.Clone()})
		code := http.StatusOK
		if len(r.codes) > 0 {
			code, r.codes = r.codes[0], r.codes[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
		if code < 300 {
			r.got <- struct{}{}
		}
	}))
	l, err := net.Listen("tcp", callbackReceiverAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	r.Listener.Close()
	r.Listener = l
	r.Start()
	t.Cleanup(r.Close)
	return r
}

// delivered waits for the receiver's first 2xx answer and returns all the
// POSTs it got.
func (r *callbackReceiver) delivered(t *testing.T) []callbackPost {
	t.Helper()
	select {
	case <-r.got:
	case <-time.After(60 * time.Second):
		r.mu.Lock()
		n := len(r.posts)
		r.mu.Unlock()
		t.Fatalf("no callback delivered within 60s (%d POSTs answered with an error)", n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]callbackPost(nil), r.posts...)
}

// invokeCallback calls fn asynchronously with X-Callback-Url: url.
func invokeCallback(t *testing.T, s *framework.APIServer, fn, arg, url string) (int, string, []byte) {
	t.Helper()
	return invokeCallbackAs(t, http.DefaultClient, s.URL, "", fn, arg, url)
}

// invokeCallbackAs is invokeCallback by a caller of its own: its client,
// the apiserver's address it uses and its bearer token (none if empty).
func invokeCallbackAs(t *testing.T, hc *http.Client, base, token, fn, arg, url string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/funcs/"+fn, strings.NewReader(arg))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("X-Callback-Url", url)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out struct {
		InstanceID string `json:"instanceId"`
	}
	_ = json.Unmarshal(data, &out)
	return resp.StatusCode, out.InstanceID, data
}

// callbackStatus waits for the instance's status.callback.
func callbackStatus(t *testing.T, s *framework.APIServer, id string) *api.FuncCallbackStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		inst, err := s.Client.FuncInstances("default").Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if inst.Status.Callback != nil {
			return inst.Status.Callback
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s has no status.callback after 30s: %+v", id, inst.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkCallbackPost checks a callback POST as OpenFaaS's queue worker
// makes it: the outcome as body, the call's id and status in headers.
func checkCallbackPost(t *testing.T, p callbackPost, id, fnStatus, body string) {
	t.Helper()
	if p.body != body || p.header.Get("X-Call-Id") != id || p.header.Get("X-Function-Status") != fnStatus ||
		p.header.Get("X-Function-Name") == "" {
		t.Errorf("callback POST: body %q, headers %v; want body %q, X-Call-Id %s, X-Function-Status %s",
			p.body, p.header, body, id, fnStatus)
	}
}

// TestFuncCallback: an asynchronous call with X-Callback-Url has its
// outcome POSTed there once it ends, as OpenFaaS's queue worker does,
// retried while the receiver fails, and the delivery recorded.
func TestFuncCallback(t *testing.T) {
	s := startCallbackCluster(t)
	echo := "def run(arg):\n    return 'cb:' + arg\n"
	raises := "def run(arg):\n    raise ValueError('no good: ' + arg)\n"
	funcTemplate(t, s, "cbecho", echo, "RETURN", "RETURN", nil)
	funcTemplate(t, s, "cbraises", raises, "RETURN", "RETURN", nil)
	publish(t, s, "cbecho", runtime(t, echo))
	publish(t, s, "cbraises", runtime(t, raises))

	t.Run("result delivered", func(t *testing.T) {
		r := newCallbackReceiver(t)
		code, id, data := invokeCallback(t, s, "cbecho", "one", r.URL+"/done")
		if code != http.StatusAccepted || id == "" {
			t.Fatalf("call: %d %s, want 202 with an instanceId", code, data)
		}
		posts := r.delivered(t)
		if len(posts) != 1 {
			t.Fatalf("%d POSTs, want 1", len(posts))
		}
		checkCallbackPost(t, posts[0], id, "200", "cb:one")
		st := callbackStatus(t, s, id)
		if !st.Delivered || st.Attempts != 1 || st.StatusCode != http.StatusOK {
			t.Errorf("status.callback: %+v, want delivered at the first attempt", st)
		}
	})

	t.Run("retried while the receiver fails", func(t *testing.T) {
		r := newCallbackReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError)
		code, id, data := invokeCallback(t, s, "cbecho", "two", r.URL)
		if code != http.StatusAccepted || id == "" {
			t.Fatalf("call: %d %s, want 202 with an instanceId", code, data)
		}
		posts := r.delivered(t)
		if len(posts) != 3 {
			t.Fatalf("%d POSTs, want 3 (two answered 500)", len(posts))
		}
		for _, p := range posts {
			checkCallbackPost(t, p, id, "200", "cb:two")
		}
		st := callbackStatus(t, s, id)
		if !st.Delivered || st.Attempts != 3 || st.StatusCode != http.StatusOK {
			t.Errorf("status.callback: %+v, want delivered at the third attempt", st)
		}
	})

	t.Run("failure delivered", func(t *testing.T) {
		r := newCallbackReceiver(t)
		code, id, data := invokeCallback(t, s, "cbraises", "three", r.URL)
		if code != http.StatusAccepted || id == "" {
			t.Fatalf("call: %d %s, want 202 with an instanceId", code, data)
		}
		posts := r.delivered(t)
		v := result(t, s, id, 30*time.Second)
		if v.Status != api.InstanceFailed || !strings.Contains(v.Error, "no good: three") {
			t.Fatalf("instance: %+v, want Failed with the function's error", v)
		}
		if len(posts) != 1 {
			t.Fatalf("%d POSTs, want 1", len(posts))
		}
		checkCallbackPost(t, posts[0], id, "500", v.Error)
		if st := callbackStatus(t, s, id); !st.Delivered || st.Attempts != 1 {
			t.Errorf("status.callback: %+v, want delivered at the first attempt", st)
		}
	})

	t.Run("a caller that accepts CloudEvents gets one", func(t *testing.T) {
		r := newCallbackReceiver(t)
		req, err := http.NewRequest(http.MethodPost, s.URL+"/api/funcs/cbecho", strings.NewReader("five"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Callback-Url", r.URL)
		req.Header.Set("Accept", "application/cloudevents+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		posts := r.delivered(t)
		if resp.StatusCode != http.StatusAccepted || len(posts) != 1 {
			t.Fatalf("call: %d, %d POSTs; want 202 and 1", resp.StatusCode, len(posts))
		}
		var ev struct {
			SpecVersion string `json:"specversion"`
			Type        string `json:"type"`
			Subject     string `json:"subject"`
			Data        string `json:"data"`
		}
		p := posts[0]
		if err := json.Unmarshal([]byte(p.body), &ev); err != nil || p.header.Get("Content-Type") != "application/cloudevents+json" ||
			ev.SpecVersion != "1.0" || ev.Type != "io.minik8s.func.result" || ev.Data != "cb:five" || ev.Subject != p.header.Get("X-Call-Id") {
			t.Errorf("callback POST: %v %s %+v; want a structured CloudEvent of the result", p.header, p.body, ev)
		}
	})

	t.Run("bad callback URL is 400", func(t *testing.T) {
		for _, url := range []string{"ftp://x", "not a url"} {
			code, _, data := invokeCallback(t, s, "cbecho", "four", url)
			if code != http.StatusBadRequest || !strings.Contains(string(data), "X-Callback-Url") {
				t.Errorf("X-Callback-Url %q: %d %s, want 400 naming X-Callback-Url", url, code, data)
			}
		}
	})
}
