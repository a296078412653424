package funcrunner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

// leaseServer keeps one Lease as the apiserver would: a create, gets, and
// updates by compare-and-swap on its version. landed makes the next
// update land and then answer 503, as a write etcd committed whose
// answer was lost does.
type leaseServer struct {
	mu      sync.Mutex
	lease   *api.Lease
	rv      int
	creates int
	landed  bool
}

func (f *leaseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	answer := func(code int, l *api.Lease) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		reason := map[int]string{http.StatusConflict: "Conflict", http.StatusNotFound: "NotFound", http.StatusServiceUnavailable: "ServiceUnavailable"}[code]
		if l != nil {
			_ = json.NewEncoder(w).Encode(l)
		} else {
			_ = json.NewEncoder(w).Encode(api.Status{Code: code, Reason: reason, Error: "fake " + reason})
		}
	}
	var in api.Lease
	if r.Body != nil {
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &in)
	}
	store := func() *api.Lease {
		f.rv++
		in.ResourceVersion = strconv.Itoa(f.rv)
		f.lease = &in
		return &in
	}
	switch {
	case r.Method == http.MethodPost && f.lease != nil:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(api.Status{Code: http.StatusConflict, Reason: "AlreadyExists", Error: "fake: already exists"})
	case r.Method == http.MethodPost:
		f.creates++
		answer(http.StatusCreated, store())
	case r.Method == http.MethodGet && f.lease != nil:
		answer(http.StatusOK, f.lease)
	case r.Method == http.MethodPut && f.lease != nil && in.ResourceVersion != f.lease.ResourceVersion:
		answer(http.StatusConflict, nil)
	case r.Method == http.MethodPut && f.lease != nil && f.landed:
		f.landed = false
		store()
		answer(http.StatusServiceUnavailable, nil)
	case r.Method == http.MethodPut && f.lease != nil:
		answer(http.StatusOK, store())
	default:
		answer(http.StatusNotFound, nil)
	}
}

// A renewal whose write landed but whose answer was lost finds the Lease
// still its own at the next one: it writes over the newer version and
// keeps its acquireTime (the controller counts its calls on from where it
// was), where it used to take the Lease anew and have them all counted
// again.
func TestLeaseKeepsItsAcquireTime(t *testing.T) {
	f := &leaseServer{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	k := newLeaseKeeper(client.New(srv.URL), "r1", "https://r1", "", newDemand(), 0, func() int { return 0 })
	ctx := context.Background()
	if err := k.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	acquired := k.lease.Spec.AcquireTime.Time
	f.mu.Lock()
	f.landed = true
	f.mu.Unlock()
	if err := k.update(ctx, true); err == nil || !strings.Contains(err.Error(), "fake") {
		t.Fatalf("the lost answer: %v", err)
	}
	if err := k.update(ctx, true); err != nil {
		t.Fatalf("the next renewal: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.lease.Spec.AcquireTime.Time.Equal(acquired) || f.lease.ResourceVersion != "3" {
		t.Errorf("after a lost answer: acquireTime %v (was %v), version %s; want the Lease renewed as it was acquired",
			f.lease.Spec.AcquireTime, acquired, f.lease.ResourceVersion)
	}
}

// A Lease removed under a live runner is taken anew: a new incarnation,
// whose started steps count from zero (the controller counts them in
// full), the steps in flight still counted.
func TestLeaseTakenAnewCountsAnew(t *testing.T) {
	f := &leaseServer{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	d := newDemand()
	k := newLeaseKeeper(client.New(srv.URL), "r1", "https://r1", "", d, 0, func() int { return 0 })
	ctx := context.Background()
	if err := k.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		d.start("ns/f")
	}
	d.done("ns/f")
	f.mu.Lock()
	f.lease = nil // removed
	f.mu.Unlock()
	if err := k.update(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := d.snapshot().Functions["ns/f"]; got.Started != 0 || got.InFlight != 4 {
		t.Errorf("after the Lease was taken anew: %+v, want Started 0, InFlight 4", got)
	}
}
