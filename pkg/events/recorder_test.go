package events

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

// An event the apiserver cannot take at once (503: a busy etcd) is tried
// again; one it refuses (403) is not.
func TestRecorderRetriesWhileUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name        string
		failures    int
		status      int
		wantPosts   int32
		wantCreated bool
	}{
		{"unavailable twice", 2, http.StatusServiceUnavailable, 3, true},
		{"always unavailable", 100, http.StatusServiceUnavailable, writeTries, false},
		{"forbidden", 100, http.StatusForbidden, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var posts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := posts.Add(1)
				if int(n) <= tc.failures {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					_ = json.NewEncoder(w).Encode(api.Status{Status: "Failure", Code: tc.status, Reason: http.StatusText(tc.status)})
					return
				}
				var e api.Event
				_ = json.NewDecoder(r.Body).Decode(&e)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_ = json.NewEncoder(w).Encode(&e)
			}))
			defer srv.Close()
			r := New(client.New(srv.URL), "test", "")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			e := &api.Event{ObjectMeta: api.ObjectMeta{Namespace: "default"}, InvolvedObject: api.ObjectReference{Kind: "Func", Name: "f"},
				Reason: "FailedStart", Type: api.EventTypeWarning}
			err := r.writeRetrying(ctx, e)
			if got := posts.Load(); got != tc.wantPosts {
				t.Errorf("%d requests, want %d", got, tc.wantPosts)
			}
			if tc.wantCreated != (err == nil) {
				t.Errorf("err %v, want created %v", err, tc.wantCreated)
			}
		})
	}
}
