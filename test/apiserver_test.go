package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/test/framework"
)

// refTemplate is a template in the reference design's wire format.
func refTemplate(name string) map[string]any {
	return map[string]any{
		"apiVersion": "v2",
		"kind":       "Func",
		"metadata":   map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"name":            name,
			"preRun":          base64.StdEncoding.EncodeToString([]byte("echo ready\n")),
			"function":        base64.StdEncoding.EncodeToString([]byte("def run(arg):\n    return arg + ' world'\n")),
			"left":            "RETURN",
			"right":           "RETURN",
			"serviceAddress":  "",
			"initInstanceNum": 1.0,
			"maxInstanceNum":  3.0,
			"minInstanceNum":  0.0,
		},
	}
}

func httpDo(t *testing.T, method, url, contentType string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func TestFuncTemplateReferenceFormat(t *testing.T) {
	s := framework.StartAPIServer(t)
	tmpl := refTemplate("append_world")
	body, _ := json.Marshal(tmpl)
	// The reference scripts post with a trailing slash.
	code, data := httpDo(t, "POST", s.URL+"/api/funcs/template/", "application/json", body)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, data)
	}
	// A second create names the function, never its storage key.
	code, data = httpDo(t, "POST", s.URL+"/api/funcs/template/", "application/json", body)
	if code != http.StatusConflict || !strings.Contains(string(data), `funcs \"append_world\" already exists`) || strings.Contains(string(data), "/registry/") {
		t.Fatalf("create again: %d %s, want 409 naming the function", code, data)
	}
	for _, path := range []string{"/api/funcs/template/append_world", "/api/v1/namespaces/default/funcs/append_world"} {
		code, data = httpDo(t, "GET", s.URL+path, "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, data)
		}
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		// The spec comes back exactly as written: no defaults filled in.
		wantSpec := tmpl["spec"].(map[string]any)
		gotSpec := got["spec"].(map[string]any)
		delete(wantSpec, "serviceAddress") // empty, omitted on the way back
		if !reflect.DeepEqual(gotSpec, wantSpec) {
			t.Fatalf("GET %s spec = %v, want %v", path, gotSpec, wantSpec)
		}
		if got["apiVersion"] != "v2" || got["kind"] != "Func" {
			t.Fatalf("GET %s type = %v %v", path, got["apiVersion"], got["kind"])
		}
		meta := got["metadata"].(map[string]any)
		if meta["uid"] == "" || meta["creationTimestamp"] == nil || meta["resourceVersion"] == "" {
			t.Fatalf("server-set metadata missing: %v", meta)
		}
	}
	for _, path := range []string{"/api/funcs/template", "/api/funcs/template/"} {
		code, data = httpDo(t, "GET", s.URL+path, "", nil)
		if code != http.StatusOK || !strings.Contains(string(data), `"append_world"`) {
			t.Fatalf("list %s: %d %s", path, code, data)
		}
	}
	// Update through the template route, then delete.
	tmpl["spec"].(map[string]any)["left"] = "other_fn"
	body, _ = json.Marshal(tmpl)
	if code, data = httpDo(t, "PUT", s.URL+"/api/funcs/template/append_world", "application/json", body); code != http.StatusOK {
		t.Fatalf("update: %d %s", code, data)
	}
	f, err := s.Client.Funcs("default").Get(context.Background(), "append_world")
	if err != nil || f.Spec.Left != "other_fn" || f.Generation != 2 {
		t.Fatalf("after update: %+v %v", f, err)
	}
	if code, data = httpDo(t, "DELETE", s.URL+"/api/funcs/template/append_world", "", nil); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, data)
	}
	if code, _ = httpDo(t, "GET", s.URL+"/api/funcs/template/append_world", "", nil); code != http.StatusNotFound {
		t.Fatalf("get after delete: %d", code)
	}
}

// readEvents reads n watch events from a raw watch stream.
func readEvents(t *testing.T, url string, n int, act func()) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch %s: %s", url, resp.Status)
	}
	act()
	var got []string
	sc := bufio.NewScanner(resp.Body)
	for len(got) < n && sc.Scan() {
		var ev struct {
			Type   string   `json:"type"`
			Object api.Func `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("bad event %q: %v", sc.Text(), err)
		}
		got = append(got, ev.Type+" "+ev.Object.Name+" "+ev.Object.Spec.Left)
	}
	return got
}

func TestFuncTemplateWatchRoutes(t *testing.T) {
	s := framework.StartAPIServer(t)
	c := context.Background()
	post := func(name, left string) {
		tmpl := refTemplate(name)
		tmpl["spec"].(map[string]any)["left"] = left
		body, _ := json.Marshal(tmpl)
		if code, data := httpDo(t, "POST", s.URL+"/api/funcs/template", "application/json", body); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, data)
		}
	}
	post("existing", "RETURN")
	act := func() {
		post("f1", "RETURN")
		f, err := s.Client.Funcs("default").Get(c, "f1")
		if err != nil {
			t.Fatal(err)
		}
		f.Spec.Left = "f2"
		if _, err := s.Client.Funcs("default").Update(c, f); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Client.Funcs("default").Delete(c, "f1", client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"ADDED existing RETURN", "ADDED f1 RETURN", "MODIFIED f1 f2", "DELETED f1 f2"}
	if got := readEvents(t, s.URL+"/api/watch/funcs/template", 4, act); !reflect.DeepEqual(got, want) {
		t.Fatalf("watch route events = %q, want %q", got, want)
	}
	// ?watch=true on one template sees only that one.
	want = []string{"ADDED f1 RETURN", "MODIFIED f1 f2", "DELETED f1 f2"}
	if got := readEvents(t, s.URL+"/api/funcs/template/f1?watch=true", 3, act); !reflect.DeepEqual(got, want) {
		t.Fatalf("single watch events = %q, want %q", got, want)
	}
}

func nextEvent[PT any](t *testing.T, ch <-chan client.Event[PT]) client.Event[PT] {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
	}
	return client.Event[PT]{}
}

func configMap(name, v string) *api.ConfigMap {
	return &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name}, Data: map[string]string{"v": v}}
}

func TestWatchOrderAndResumeAcrossRestart(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cms := s.Client.ConfigMaps("default")
	// From a listed version: a watch without one lists first, in the
	// background, and a list that comes after the writes below would show
	// them as one ADDED of the last state.
	_, rv, err := cms.List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch := cms.Watch(ctx, client.ListOptions{ResourceVersion: rv})

	expect := func(typ api.EventType, name, v string) {
		t.Helper()
		ev := nextEvent(t, ch)
		if ev.Type != typ || ev.Object.Name != name || ev.Object.Data["v"] != v {
			t.Fatalf("event %s %s %v, want %s %s %s", ev.Type, ev.Object.Name, ev.Object.Data, typ, name, v)
		}
	}
	created, err := cms.Create(ctx, configMap("a", "1"))
	if err != nil {
		t.Fatal(err)
	}
	created.Data["v"] = "2"
	if _, err := cms.Update(ctx, created); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Delete(ctx, "a", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(api.Added, "a", "1")
	expect(api.Modified, "a", "2")
	expect(api.Deleted, "a", "2")

	// Restart: changes made before the watcher is back must still arrive,
	// once each and in order.
	s.Restart()
	for i := 0; i < 5; i++ {
		if _, err := cms.Create(ctx, configMap(fmt.Sprintf("b%d", i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Delete(ctx, "b0", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		expect(api.Added, fmt.Sprintf("b%d", i), "x")
	}
	expect(api.Deleted, "b0", "x")
	select {
	case ev := <-ch:
		t.Fatalf("unexpected extra event %s %s", ev.Type, ev.Object.Name)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestObjectsSurviveRestart(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := context.Background()
	c := s.Client
	replicas := int32(2)
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Nodes().Create(ctx, &api.Node{ObjectMeta: api.ObjectMeta{Name: "n1"}})
	mustCreate(err)
	_, err = c.Pods("default").Create(ctx, &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p1"},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "img"}}}})
	mustCreate(err)
	_, err = c.ReplicaSets("default").Create(ctx, &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "rs1"},
		Spec: api.ReplicaSetSpec{Replicas: &replicas, Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "img"}}}}}})
	mustCreate(err)
	_, err = c.Services("default").Create(ctx, &api.Service{ObjectMeta: api.ObjectMeta{Name: "svc1"},
		Spec: api.ServiceSpec{Selector: map[string]string{"app": "x"}, Ports: []api.ServicePort{{Port: 80}}}})
	mustCreate(err)
	_, err = c.ConfigMaps("default").Create(ctx, configMap("cm1", "v"))
	mustCreate(err)
	body, _ := json.Marshal(refTemplate("fn1"))
	if code, data := httpDo(t, "POST", s.URL+"/api/funcs/template", "application/json", body); code != http.StatusCreated {
		t.Fatalf("create func: %d %s", code, data)
	}

	s.Restart()

	for _, path := range []string{
		"/api/v1/nodes/n1", "/api/v1/namespaces/default/pods/p1", "/apis/apps/v1/namespaces/default/replicasets/rs1",
		"/api/v1/namespaces/default/services/svc1", "/api/v1/namespaces/default/configmaps/cm1", "/api/funcs/template/fn1",
	} {
		if code, data := httpDo(t, "GET", s.URL+path, "", nil); code != http.StatusOK {
			t.Errorf("after restart GET %s: %d %s", path, code, data)
		}
	}
}

// revision reads the store's revision: it moves on every write, so an
// unchanged revision proves a refused request wrote nothing.
func revision(t *testing.T, s *framework.APIServer) string {
	t.Helper()
	_, rv, err := s.Client.ConfigMaps("default").List(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func TestBadInput(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := context.Background()
	existing, err := s.Client.ConfigMaps("default").Create(ctx, configMap("existing", "1"))
	if err != nil {
		t.Fatal(err)
	}
	stale := existing.ResourceVersion
	existing.Data["v"] = "2"
	if _, err := s.Client.ConfigMaps("default").Update(ctx, existing); err != nil {
		t.Fatal(err)
	}
	big := `{"metadata":{"name":"big"},"data":{"v":"` + strings.Repeat("x", 2<<20) + `"}}`
	pods := s.URL + "/api/v1/namespaces/default/pods"
	cms := s.URL + "/api/v1/namespaces/default/configmaps"
	tests := []struct {
		name, method, url, contentType, body string
		code                                 int
		reason, field, msg                   string
	}{
		{"malformed json", "POST", pods, "application/json", `{"metadata": {"name": "p"`, 400, "BadRequest", "", "malformed JSON"},
		{"malformed yaml", "POST", pods, "application/yaml", "metadata:\n  name: [p\n", 400, "BadRequest", "", "malformed YAML"},
		{"empty body", "POST", pods, "application/json", "", 400, "BadRequest", "", "empty"},
		{"unknown field", "POST", cms + "?fieldValidation=Strict", "application/json", `{"metadata":{"name":"x"},"dta":{}}`, 400, "BadRequest", "dta", "unknown field"},
		{"a field not served", "POST", pods, "application/json", `{"metadata":{"name":"x"},"spec":{"volumes":[{"name":"v","nfs":{"server":"s","path":"/"}}],"containers":[{"name":"c","image":"i"}]}}`,
			422, "Invalid", "spec.volumes[0].nfs", "does not serve"},
		{"wrong type", "POST", cms, "application/json", `{"metadata":{"name":"x"},"data":{"v":1}}`, 400, "BadRequest", "data", "expected string"},
		{"unknown kind", "GET", s.URL + "/api/v1/namespaces/default/widgets", "", "", 404, "NotFound", "", `resource type "widgets"`},
		{"kind mismatch", "POST", pods, "application/json", `{"kind":"Service","metadata":{"name":"x"}}`, 400, "BadRequest", "kind", `"Service"`},
		{"invalid name", "POST", cms, "application/json", `{"metadata":{"name":"Bad_Name"}}`, 422, "Invalid", "metadata.name", "lower case"},
		{"reserved func name", "POST", s.URL + "/api/funcs/template", "application/json",
			`{"metadata":{"name":"RETURN"},"spec":{"name":"RETURN","function":"ZGVmIHJ1bihhKTogcmV0dXJuIGE="}}`, 422, "Invalid", "metadata.name", "reserved"},
		{"func unknown field, named with its path", "POST", s.URL + "/api/funcs/template", "application/json",
			`{"metadata":{"name":"f"},"spec":{"name":"f","functon":"ZGVmIHJ1bihhKTogcmV0dXJuIGE="}}`, 400, "BadRequest", "spec.functon", `unknown field "spec.functon"`},
		{"func bad base64", "POST", s.URL + "/api/funcs/template", "application/json",
			`{"metadata":{"name":"f"},"spec":{"name":"f","function":"not base64!"}}`, 422, "Invalid", "spec.function", "base64"},
		{"func min > max", "POST", s.URL + "/api/funcs/template", "application/json",
			`{"metadata":{"name":"f"},"spec":{"name":"f","function":"ZGVmIHJ1bihhKTogcmV0dXJuIGE=","minInstanceNum":3,"maxInstanceNum":2}}`, 422, "Invalid", "spec.minInstanceNum", "more than"},
		{"bad quantity", "POST", pods, "application/json",
			`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"memory":"lots"}}}]}}`, 422, "Invalid", "spec.containers[0].resources.limits[memory]", "must be a quantity"},
		{"no containers", "POST", pods, "application/json", `{"metadata":{"name":"p"},"spec":{}}`, 422, "Invalid", "spec.containers", `Pod "p" is invalid: spec.containers: Required value`},
		{"oversized body", "POST", cms, "application/json", big, 413, "RequestEntityTooLarge", "", "larger than"},
		{"stale resourceVersion", "PUT", cms + "/existing", "application/json",
			`{"metadata":{"name":"existing","resourceVersion":"` + stale + `"},"data":{"v":"3"}}`, 409, "Conflict", "", "stale"},
		{"already exists", "POST", cms, "application/json", `{"metadata":{"name":"existing"}}`, 409, "AlreadyExists", "", "exists"},
		{"missing object", "GET", cms + "/nope", "", "", 404, "NotFound", "", `"nope" not found`},
		{"update missing", "PUT", cms + "/nope", "application/json", `{"metadata":{"name":"nope"}}`, 404, "NotFound", "", "not found"},
		{"delete missing", "DELETE", cms + "/nope", "", "", 404, "NotFound", "", "not found"},
		{"name mismatch", "PUT", cms + "/existing", "application/json", `{"metadata":{"name":"other"}}`, 400, "BadRequest", "metadata.name", "does not match"},
		{"namespace mismatch", "POST", cms, "application/json", `{"metadata":{"name":"x","namespace":"kube"}}`, 400, "BadRequest", "metadata.namespace", "does not match"},
		{"bad label selector", "GET", cms + "?labelSelector=a%20in%20b", "", "", 400, "BadRequest", "labelSelector", "expected: '('"},
		{"bad watch version", "GET", cms + "?watch=true&resourceVersion=abc", "", "", 400, "BadRequest", "resourceVersion", "invalid resource version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := revision(t, s)
			code, data := httpDo(t, tc.method, tc.url, tc.contentType, []byte(tc.body))
			var st api.Status
			if err := json.Unmarshal(data, &st); err != nil {
				t.Fatalf("error body is not JSON: %s", data)
			}
			if code != tc.code || st.Reason != tc.reason || st.Field != tc.field || !strings.Contains(st.Error, tc.msg) {
				t.Fatalf("got %d %+v, want %d reason %s field %q message containing %q", code, st, tc.code, tc.reason, tc.field, tc.msg)
			}
			if after := revision(t, s); after != before {
				t.Fatalf("a refused request wrote: revision %s -> %s", before, after)
			}
		})
	}
	// The client maps the answers back to error classes.
	_, err = s.Client.ConfigMaps("default").Get(ctx, "nope")
	if !errdefs.IsNotFound(err) {
		t.Fatalf("client Get missing: %v", err)
	}
	_, err = s.Client.ConfigMaps("default").Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "Bad_Name"}})
	if !errdefs.IsInvalid(err) || errdefs.Field(err) != "metadata.name" {
		t.Fatalf("client Create invalid: %v (field %q)", err, errdefs.Field(err))
	}
}

func TestSubresourcesAndSelectors(t *testing.T) {
	s := framework.StartAPIServer(t)
	ctx := context.Background()
	pods := s.Client.Pods("default")
	for i, app := range []string{"web", "web", "db"} {
		_, err := pods.Create(ctx, &api.Pod{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"app": app}},
			Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "img"}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := pods.List(ctx, client.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(list) != 2 {
		t.Fatalf("label selector app=web: %d pods, %v", len(list), err)
	}
	list, _, err = pods.List(ctx, client.ListOptions{LabelSelector: "app notin (web)"})
	if err != nil || len(list) != 1 || list[0].Name != "p2" {
		t.Fatalf("label selector notin: %v %v", list, err)
	}

	// Binding: once only.
	p0, _ := pods.Get(ctx, "p0")
	if err := s.Client.Bind(ctx, "default", "p0", p0.UID, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Bind(ctx, "default", "p0", p0.UID, "n2"); !errdefs.IsConflict(err) {
		t.Fatalf("second bind: %v, want Conflict", err)
	}
	bound, _, err := pods.List(ctx, client.ListOptions{FieldSelector: "spec.nodeName=n1"})
	if err != nil || len(bound) != 1 || bound[0].Name != "p0" {
		t.Fatalf("field selector: %v %v", bound, err)
	}

	// Status subresource changes status only; PUT of the object keeps status.
	p0, _ = pods.Get(ctx, "p0")
	p0.Status.Phase = api.PodRunning
	p0.Spec.Containers[0].Image = "changed-by-status"
	if _, err := pods.UpdateStatus(ctx, p0); err != nil {
		t.Fatal(err)
	}
	p0, _ = pods.Get(ctx, "p0")
	if p0.Status.Phase != api.PodRunning || p0.Spec.Containers[0].Image != "img" {
		t.Fatalf("after status update: phase %s image %s", p0.Status.Phase, p0.Spec.Containers[0].Image)
	}
	p0.Status.Phase = api.PodFailed
	p0.Labels["extra"] = "yes"
	if _, err := pods.Update(ctx, p0); err != nil {
		t.Fatal(err)
	}
	p0, _ = pods.Get(ctx, "p0")
	if p0.Status.Phase != api.PodRunning || p0.Labels["extra"] != "yes" {
		t.Fatalf("after update: phase %s labels %v", p0.Status.Phase, p0.Labels)
	}

	// A bound, running pod is deleted gracefully; grace 0 removes it.
	marked, err := pods.Delete(ctx, "p0", client.DeleteOptions{})
	if err != nil || marked.DeletionTimestamp == nil || marked.DeletionGracePeriodSeconds == nil || *marked.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("graceful delete: %+v %v", marked, err)
	}
	zero := int64(0)
	if _, err := pods.Delete(ctx, "p0", client.DeleteOptions{GracePeriodSeconds: &zero, UID: marked.UID}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "p0"); !errdefs.IsNotFound(err) {
		t.Fatalf("after forced delete: %v", err)
	}
	// An unbound pod goes at once.
	if _, err := pods.Delete(ctx, "p1", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "p1"); !errdefs.IsNotFound(err) {
		t.Fatalf("unbound pod after delete: %v", err)
	}

	// Scale subresource.
	three := int32(3)
	rs := &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "rs"}, Spec: api.ReplicaSetSpec{Replicas: &three,
		Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "img"}}}}}}
	if _, err := s.Client.ReplicaSets("default").Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	sc, err := s.Client.Scale(ctx, "default", "rs", 5)
	if err != nil || sc.Spec.Replicas != 5 || sc.Status.Selector != "app=web" {
		t.Fatalf("scale: %+v %v", sc, err)
	}
	got, _ := s.Client.ReplicaSets("default").Get(ctx, "rs")
	if *got.Spec.Replicas != 5 || got.Generation != 2 {
		t.Fatalf("after scale: replicas %d generation %d", *got.Spec.Replicas, got.Generation)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	s := framework.StartAPIServer(t)
	if code, data := httpDo(t, "GET", s.URL+"/healthz", "", nil); code != 200 || string(data) != "ok" {
		t.Fatalf("healthz: %d %s", code, data)
	}
	httpDo(t, "GET", s.URL+"/api/v1/nodes", "", nil)
	code, data := httpDo(t, "GET", s.URL+"/metrics", "", nil)
	if code != 200 || !strings.Contains(string(data), `apiserver_requests_total{code="200",method="GET",route="/api/v1/nodes"}`) {
		t.Fatalf("metrics: %d %s", code, data)
	}
}
