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

// instanceServer serves one instance by GET /api/funcs/ID and by the REST
// list and watch of funcinstances; set changes it and tells the watchers.
type instanceServer struct {
	mu        sync.Mutex
	inst      api.FuncInstance
	rv        int
	failReads int  // answer this many GETs with 503 first
	noWatch   bool // refuse lists and watches
	events    chan api.FuncInstance
}

func newInstanceServer(t *testing.T, phase string) (*instanceServer, *Client) {
	s := &instanceServer{events: make(chan api.FuncInstance, 16)}
	s.inst = api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "id-1", Namespace: "default", ResourceVersion: "1"},
		Spec: api.FuncInstanceSpec{Function: "hello"}, Status: api.FuncInstanceStatus{Phase: phase}}
	s.rv = 1
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, New(srv.URL)
}

// set changes the instance's phase (and adds a step) and sends the change
// to a watcher.
func (s *instanceServer) set(phase string) {
	s.mu.Lock()
	s.rv++
	s.inst.ResourceVersion = fmt.Sprint(s.rv)
	s.inst.Status.Phase = phase
	s.inst.Status.Steps = append(s.inst.Status.Steps, api.FuncStepRecord{Function: "hello"})
	inst := s.inst
	s.mu.Unlock()
	s.events <- inst
}

func (s *instanceServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	inst := s.inst
	fail := s.failReads > 0 && strings.HasPrefix(r.URL.Path, funcsPath)
	if fail {
		s.failReads--
	}
	noWatch := s.noWatch
	s.mu.Unlock()
	switch {
	case r.URL.Path == funcsPath+"id-1":
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"etcd is away: unavailable","reason":"ServiceUnavailable","code":503}`)
			return
		}
		json.NewEncoder(w).Encode(api.FuncInstanceView{InstanceID: inst.Name, Function: inst.Spec.Function,
			Status: inst.Status.Phase, Steps: inst.Status.Steps})
	case r.URL.Path == api.FuncInstancesResource.Path("default", "") && !noWatch:
		if r.URL.Query().Get("fieldSelector") != "metadata.name=id-1" {
			http.Error(w, "unexpected selector "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("watch") != "true" {
			json.NewEncoder(w).Encode(api.FuncInstanceList{ListMeta: api.ListMeta{ResourceVersion: inst.ResourceVersion},
				Items: []api.FuncInstance{inst}})
			return
		}
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case ev := <-s.events:
				json.NewEncoder(w).Encode(map[string]any{"type": api.Modified, "object": ev})
				w.(http.Flusher).Flush()
			}
		}
	default:
		http.Error(w, `{"error":"no such path: not found","reason":"NotFound","code":404}`, http.StatusNotFound)
	}
}

func setRecheck(t *testing.T, d time.Duration) {
	old := followRecheck
	followRecheck = d
	t.Cleanup(func() { followRecheck = old })
}

// TestFuncWaitFollowsTheWatch: with rechecks out of the way, only the
// watch can tell Wait that the instance moved on.
func TestFuncWaitFollowsTheWatch(t *testing.T) {
	setRecheck(t, time.Hour)
	s, c := newInstanceServer(t, api.InstanceRunning)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	views := make(chan api.FuncInstanceView, 16)
	type result struct {
		v   *api.FuncInstanceView
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := c.FuncCalls("").Follow(ctx, "id-1", func(v *api.FuncInstanceView) { views <- *v })
		done <- result{v, err}
	}()
	select {
	case v := <-views:
		if v.Status != api.InstanceRunning {
			t.Fatalf("first view %+v", v)
		}
	case <-ctx.Done():
		t.Fatal("fn not told of the first view")
	}
	s.set(api.InstanceRunning)
	s.set(api.InstanceSucceeded)
	var r result
	select {
	case r = <-done:
	case <-time.After(40 * time.Second):
		t.Fatal("Follow did not return")
	}
	if r.err != nil || r.v.Status != api.InstanceSucceeded || len(r.v.Steps) != 2 {
		t.Fatalf("Follow = %+v, %v", r.v, r.err)
	}
	close(views)
	var last api.FuncInstanceView
	for v := range views {
		last = v
	}
	if last.Status != api.InstanceSucceeded {
		t.Errorf("fn did not see the final view: %+v", last)
	}
}

func TestFuncWait(t *testing.T) {
	for _, tc := range []struct {
		name      string
		noWatch   bool
		failReads int
		timeout   time.Duration
		finish    bool
		wantErr   func(error) bool
	}{
		{name: "the watch is down: rechecks find the end", noWatch: true, finish: true},
		{name: "the apiserver is away for a while", failReads: 3, finish: true},
		{name: "the apiserver stays away: its error when ctx ends", noWatch: true, failReads: 1 << 30, timeout: 300 * time.Millisecond,
			wantErr: func(err error) bool { return errors.Is(err, errdefs.ErrUnavailable) }},
		{name: "ctx ends first", timeout: 300 * time.Millisecond,
			wantErr: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setRecheck(t, 10*time.Millisecond)
			s, c := newInstanceServer(t, api.InstanceRunning)
			s.noWatch, s.failReads = tc.noWatch, tc.failReads
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			// The instance ends once Follow has read it running, so only
			// a later read can see the end.
			var once sync.Once
			v, err := c.FuncCalls("default").Follow(ctx, "id-1", func(v *api.FuncInstanceView) {
				if v.Status == api.InstanceRunning && tc.finish {
					once.Do(func() { go s.set(api.InstanceFailed) })
				}
			})
			if tc.wantErr != nil {
				if v != nil || !tc.wantErr(err) {
					t.Fatalf("Wait = %+v, %v", v, err)
				}
				return
			}
			if err != nil || v.Status != api.InstanceFailed {
				t.Fatalf("Wait = %+v, %v", v, err)
			}
		})
	}
}

func TestFuncWaitUnknownInstance(t *testing.T) {
	_, c := newInstanceServer(t, api.InstanceRunning)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if v, err := c.FuncCalls("").Wait(ctx, "nobody"); !errdefs.IsNotFound(err) {
		t.Fatalf("Wait = %+v, %v", v, err)
	}
}
