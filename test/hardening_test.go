package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// checkRefused asserts an answer's status and that its error names field.
func checkRefused(t *testing.T, what string, status int, data []byte, want int, field string) {
	t.Helper()
	var st api.Status
	_ = json.Unmarshal(data, &st)
	if status != want || (field != "" && st.Field != field) {
		t.Errorf("%s: %d %s, want %d naming %s", what, status, data, want, field)
	}
}

// Status writes are checked like every other write, and a refused one
// leaves the object as it was.
func TestStatusWritesValidated(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := context.Background()
	node := &api.Node{ObjectMeta: api.ObjectMeta{Name: "n1"}, Status: api.NodeStatus{Capacity: api.ResourceList{"cpu": "2"}}}
	if _, err := s.Client.Nodes().Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p1"}, Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}}}}
	if _, err := s.Client.Pods("default").Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	funcTemplate(t, s, "f1", "def run(a):\n    return a\n", "RETURN", "RETURN", map[string]any{"maxInstanceNum": 3})

	cases := []struct {
		what, path, body, field string
	}{
		{"node capacity abc", "/api/v1/nodes/n1/status",
			`{"metadata":{"name":"n1"},"status":{"capacity":{"cpu":"abc"}}}`, "status.capacity[cpu]"},
		{"node capacity 1e19 cpu", "/api/v1/nodes/n1/status",
			`{"metadata":{"name":"n1"},"status":{"capacity":{"cpu":"1e19"}}}`, "status.capacity[cpu]"},
		{"pod phase Bogus", "/api/v1/namespaces/default/pods/p1/status",
			`{"metadata":{"name":"p1"},"status":{"phase":"Bogus"}}`, "status.phase"},
		{"func counter 2^40", "/api/v1/namespaces/default/funcs/f1/status",
			`{"metadata":{"name":"f1"},"status":{"counter":1099511627776}}`, "status.counter"},
	}
	for _, tc := range cases {
		status, data := httpDo(t, "PUT", s.URL+tc.path, "application/json", []byte(tc.body))
		checkRefused(t, tc.what, status, data, http.StatusUnprocessableEntity, tc.field)
	}
	n, err := s.Client.Nodes().Get(ctx, "n1")
	if err != nil || n.Status.Capacity["cpu"] != "2" {
		t.Errorf("node after refused status writes: %+v, %v", n.Status, err)
	}
	p, err := s.Client.Pods("default").Get(ctx, "p1")
	if err != nil || p.Status.Phase == "Bogus" {
		t.Errorf("pod after a refused status write: %+v, %v", p.Status, err)
	}
	f, err := s.Client.Funcs("default").Get(ctx, "f1")
	if err != nil || f.Status.Counter > 3 {
		t.Errorf("func after a refused status write: %+v, %v", f.Status, err)
	}

	rs := `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs1"},"spec":{"replicas":1,
		"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
		"spec":{"containers":[{"name":"c","image":"i"}]}}}}`
	if status, data := httpDo(t, "POST", s.URL+"/apis/apps/v1/namespaces/default/replicasets", "application/json", []byte(rs)); status != http.StatusCreated {
		t.Fatalf("replicaset: %d %s", status, data)
	}
	status, data := httpDo(t, "PUT", s.URL+"/apis/apps/v1/namespaces/default/replicasets/rs1/status", "application/json",
		[]byte(`{"metadata":{"name":"rs1"},"status":{"replicas":-3}}`))
	checkRefused(t, "replicaset status.replicas -3", status, data, http.StatusUnprocessableEntity, "status.replicas")
	status, data = httpDo(t, "PUT", s.URL+"/apis/apps/v1/namespaces/default/replicasets/rs1/scale", "application/json",
		[]byte(`{"metadata":{"name":"rs1"},"spec":{"replicas":-3}}`))
	checkRefused(t, "scale to -3", status, data, http.StatusUnprocessableEntity, "spec.replicas")
}

// Numbers that overflow what they are stored as are refused, not wrapped.
func TestOverflowingNumbersRefused(t *testing.T) {
	s := framework.StartAPIServer(t)
	for _, tc := range []struct {
		what, res, field string
	}{
		{"cpu", `"limits":{"cpu":"1e19"}`, "spec.containers[0].resources.limits[cpu]"},
		{"memory", `"requests":{"memory":"20Ei"}`, "spec.containers[0].resources.requests[memory]"},
	} {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big-%s"},
			"spec":{"containers":[{"name":"c","image":"i","resources":{%s}}]}}`, tc.what, tc.res)
		status, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/pods", "application/json", []byte(body))
		checkRefused(t, tc.what, status, data, http.StatusUnprocessableEntity, tc.field)
	}
	for _, field := range []string{"initInstanceNum", "maxInstanceNum", "minInstanceNum"} {
		spec := map[string]any{"name": "huge", "function": "ZGVmIHJ1bihhKTogcmV0dXJuIGEK", field: 1 << 40}
		body, _ := json.Marshal(map[string]any{"apiVersion": "v2", "kind": "Func", "metadata": map[string]any{"name": "huge"}, "spec": spec})
		status, data := httpDo(t, "POST", s.URL+"/api/funcs/template", "application/json", body)
		checkRefused(t, field+" 2^40", status, data, http.StatusUnprocessableEntity, "spec."+field)
	}
	items, _, err := s.Client.Pods("default").List(context.Background(), client.ListOptions{})
	if err != nil || len(items) != 0 {
		t.Fatalf("refused creates wrote %d pods (%v)", len(items), err)
	}
}

// A watch from a version the store has not reached is refused (it would
// skip the changes up to it) with Kubernetes' "Too large resource
// version", the largest version included; a selector that does not parse
// is 400.
func TestWatchAndSelectorInput(t *testing.T) {
	s := framework.StartAPIServer(t)
	hc := &http.Client{Timeout: 20 * time.Second}
	for _, rv := range []string{"9223372036854775807", "100000000"} {
		start := time.Now()
		resp, err := hc.Get(s.URL + "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=" + rv)
		if err != nil {
			t.Fatalf("watch from %s: %v", rv, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(data), "Too large resource version: "+rv) {
			t.Errorf("watch from %s: %d %s, want 504 saying the version is too large", rv, resp.StatusCode, data)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("watch from %s answered after %s", rv, d)
		}
	}
	for _, sel := range []string{"a=b=c", "a in b", "=x"} {
		status, data := httpDo(t, "GET", s.URL+"/api/v1/pods?labelSelector="+url.QueryEscape(sel), "", nil)
		checkRefused(t, "labelSelector "+sel, status, data, http.StatusBadRequest, "labelSelector")
	}
}

// A request body trickled in a byte now and then is cut off, whether the
// handler reads it or refuses the request without reading it (the server
// would otherwise read the rest before answering, for ever).
func TestTrickledBodyCutOff(t *testing.T) {
	t.Parallel() // it mostly waits
	s := framework.StartAPIServer(t)
	for _, host := range []string{"127.0.0.1", "elsewhere.example"} {
		t.Run("host="+host, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", s.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", host)
			start := time.Now()
			closed := make(chan time.Duration, 1)
			go func() {
				_, _ = io.Copy(io.Discard, conn) // returns when the server answers and closes, or closes
				closed <- time.Since(start)
			}()
			tick := time.NewTicker(1500 * time.Millisecond)
			defer tick.Stop()
			for i := 0; i < 100; i++ {
				select {
				case d := <-closed:
					t.Logf("cut off after %s and %d bytes", d.Round(time.Millisecond), i)
					return
				case <-tick.C:
					if _, err := conn.Write([]byte("{")); err != nil {
						t.Logf("cut off after %s: %v", time.Since(start).Round(time.Millisecond), err)
						return
					}
				}
				if time.Since(start) > 60*time.Second {
					break
				}
			}
			t.Fatalf("a body trickled at a byte per 1.5 s was still being read after %s", time.Since(start).Round(time.Second))
		})
	}
}

// One client holds at most its share of watches (429 beyond), and a
// watcher that does not read is cut off, not buffered without bound: it
// resumes from the last version it got and misses nothing.
func TestWatchLimits(t *testing.T) {
	t.Parallel()
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) { c.MaxWatchesPerClient = 3 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := s.URL + "/api/v1/namespaces/default/configmaps?watch=true"
	var open []*http.Response
	for i := 0; i < 3; i++ {
		resp := startWatch(t, ctx, url)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch %d: %d", i+1, resp.StatusCode)
		}
		open = append(open, resp)
	}
	resp := startWatch(t, ctx, url)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a fourth watch: %d %s, want 429 with Retry-After", resp.StatusCode, data)
	}
	open[2].Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := startWatch(t, ctx, url)
		if resp.StatusCode == http.StatusOK {
			open[2] = resp
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a closed watch's place was not given back: %d", resp.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// open[0] is never read while 600 changes of 64 KiB go by: about 39
	// MB, more than a watch's bound (16 MiB) and the socket buffers together.
	value := strings.Repeat("x", 64<<10)
	const changes = 600
	for i := 0; i < changes; i++ {
		cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}, Data: map[string]string{"v": value}}
		if _, err := s.Client.ConfigMaps("default").Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	seen, last := 0, ""
	r := bufio.NewReaderSize(open[0].Body, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break
		}
		var ev struct {
			Type   string        `json:"type"`
			Object api.ConfigMap `json:"object"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.Type != "ADDED" {
			t.Fatalf("event %.200s", line)
		}
		seen++
		last = ev.Object.ResourceVersion
	}
	if seen >= changes {
		t.Fatalf("the slow watcher got all %d events: it was not cut off", seen)
	}
	// The other two watches were not read either: closed, they hold
	// nothing of the client's share. Resuming from the last version the
	// slow watcher got brings the rest.
	for _, o := range open[1:] {
		o.Body.Close()
	}
	// A backlog larger than a watch's bound may cut the resumed watch
	// too: each resume, as a reflector's, goes on from the last version
	// it got, and each brings some.
	rest, _, _ := strings.Cut(url, "?")
	for resumes := 0; seen < changes; resumes++ {
		if resumes == 10 {
			t.Fatalf("%d resumes brought %d of %d events", resumes, seen, changes)
		}
		resp := startWatch(t, ctx, rest+"?watch=true&resourceVersion="+last)
		r := bufio.NewReaderSize(resp.Body, 1<<20)
		got := 0
		for seen < changes {
			line, err := r.ReadBytes('\n')
			if err != nil {
				break
			}
			var ev struct {
				Object api.ConfigMap `json:"object"`
			}
			if err := json.Unmarshal(line, &ev); err != nil {
				t.Fatalf("event %.200s: %v", line, err)
			}
			seen, got, last = seen+1, got+1, ev.Object.ResourceVersion
		}
		resp.Body.Close()
		if got == 0 {
			t.Fatalf("a resumed watch brought nothing after %d of %d events", seen, changes)
		}
	}
}

func startWatch(t *testing.T, ctx context.Context, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// With etcd's quorum lost (three members, two stopped), health says so
// naming etcd, and every request answers 503 promptly instead of hanging.
func TestHealthWhenEtcdLosesQuorum(t *testing.T) {
	cluster := framework.StartEtcdCluster(t, 3)
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) { c.EtcdEndpoints = cluster.Endpoints })
	cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "before"}}
	if _, err := s.Client.ConfigMaps("default").Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if status, data := httpDo(t, "GET", s.URL+p, "", nil); status != http.StatusOK {
			t.Fatalf("%s with a whole cluster: %d %s", p, status, data)
		}
	}
	cluster.Stop(1)
	cluster.Stop(2)

	hc := &http.Client{Timeout: 40 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range []string{"/healthz", "/readyz"} {
		for {
			resp, err := hc.Get(s.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(data), "etcd") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s 30 s after quorum was lost: %d %s", p, resp.StatusCode, data)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/api/v1/namespaces/default/configmaps", ""},
		{"GET", "/api/v1/namespaces/default/configmaps/before", ""},
		{"POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"after"}}`},
	} {
		start := time.Now()
		req, _ := http.NewRequest(r.method, s.URL+r.path, strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v after %s", r.method, r.path, err, time.Since(start))
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s %s without quorum: %d %s, want 503", r.method, r.path, resp.StatusCode, data)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("%s %s took %s to answer", r.method, r.path, d.Round(time.Millisecond))
		}
	}
}
