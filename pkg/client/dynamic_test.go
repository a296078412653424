package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

func TestDynamicErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/default/pods/missing":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"Pod \"missing\" not found in namespace \"default\": not found","reason":"NotFound","code":404}`))
		case "/api/v1/namespaces/default/pods":
			w.WriteHeader(http.StatusUnprocessableEntity)
			w.Write([]byte(`{"error":"metadata.name: bad","reason":"Invalid","field":"metadata.name","code":422}`))
		default:
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("boom"))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	pods := New(srv.URL).Resource(api.PodsResource, "default")

	_, err := pods.Get(ctx, "missing")
	var se *StatusError
	if !errors.As(err, &se) || se.Reason != "NotFound" || se.Code != 404 || !errdefs.IsNotFound(err) {
		t.Errorf("get missing: %#v", err)
	}
	_, err = pods.Create(ctx, &api.Pod{ObjectMeta: api.ObjectMeta{Name: "Bad"}})
	if !errors.As(err, &se) || se.Reason != "Invalid" || se.Field != "metadata.name" || !errdefs.IsInvalid(err) {
		t.Errorf("create invalid: %#v", err)
	}
	_, err = New(srv.URL).Resource(api.NodesResource, "ignored").Get(ctx, "x")
	if !errors.As(err, &se) || se.Reason != "InternalError" || se.Message != "boom" {
		t.Errorf("internal error: %#v", err)
	}

	// A closed port: no answer at all.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = New(addr).Resource(api.PodsResource, "default").Get(ctx, "x")
	var te *TransportError
	if !errors.As(err, &te) || errors.As(err, &se) || !errors.Is(err, errdefs.ErrUnavailable) || te.Server != "http://"+addr {
		t.Errorf("unreachable: %#v", err)
	}
}

func TestDynamicPaths(t *testing.T) {
	var paths []string
	var deleteBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.RequestURI())
		if r.Method == http.MethodDelete {
			deleteBody, _ = io.ReadAll(r.Body)
		}
		w.Write([]byte(`{"items":[]}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	c := New(srv.URL)
	_, _, _ = c.Resource(api.PodsResource, "").List(ctx, ListOptions{LabelSelector: "app=web"})
	_, _, _ = c.Resource(api.NodesResource, "default").List(ctx, ListOptions{})
	_, _ = c.Resource(api.FuncsResource, "").Create(ctx, &api.Func{ObjectMeta: api.ObjectMeta{Name: "f", Namespace: "ns1"}})
	_, _ = c.Resource(api.ReplicaSetsResource, "ns2").Update(ctx, &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "r"}})
	zero := int64(0)
	_, _ = c.Resource(api.PodsResource, "default").Delete(ctx, "p", DeleteOptions{GracePeriodSeconds: &zero})
	want := []string{
		"GET /api/v1/pods?labelSelector=app%3Dweb",
		"GET /api/v1/nodes",
		"POST " + api.FuncsResource.Path("ns1", ""),
		"PUT /apis/apps/v1/namespaces/ns2/replicasets/r",
		// The options go in the body, which the apiserver then reads alone.
		"DELETE /api/v1/namespaces/default/pods/p",
	}
	if len(paths) != len(want) {
		t.Fatalf("requests = %q, want %q", paths, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Errorf("request %d = %q, want %q", i, paths[i], want[i])
		}
	}
	if got := string(deleteBody); got != `{"apiVersion":"v1","gracePeriodSeconds":0,"kind":"DeleteOptions"}` {
		t.Errorf("delete body = %s", got)
	}
}
