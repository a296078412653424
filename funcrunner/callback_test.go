package funcrunner

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/egress"
)

// receiver is a callback endpoint answering a script of status codes (the
// last one repeats) and recording what it got.
type receiver struct {
	mu     sync.Mutex
	codes  []int
	bodies []string
	hdrs   []http.Header
	block  chan struct{} // non-nil: hold every request until closed
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.bodies)
	r.bodies = append(r.bodies, string(b))
	r.hdrs = append(r.hdrs, req.Header.Clone())
	code := r.codes[min(n, len(r.codes)-1)]
	r.mu.Unlock()
	if r.block != nil {
		select {
		case <-r.block:
		case <-req.Context().Done():
		}
	}
	w.WriteHeader(code)
}

func (r *receiver) got() ([]string, []http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...), append([]http.Header(nil), r.hdrs...)
}

// receiverAddr is where the tests' receivers listen: a loopback address
// the tests' guard opens, as an operator opens one with
// --egress-allow-cidrs 127.0.0.2/32; every other address keeps the
// default refusals.
const receiverAddr = "127.0.0.2"

var testGuard = egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix(receiverAddr + "/32")}})

// startReceiver serves h on receiverAddr until the test ends.
func startReceiver(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	return startServerOn(t, receiverAddr, h)
}

func startServerOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return srv
}

func testCallbacks(attempts int) *callbacks {
	cb := newCallbacks(testGuard)
	cb.attempts, cb.backoff, cb.timeout = attempts, time.Millisecond, 5*time.Second
	return cb
}

func endedInstance(url, phase string) *api.FuncInstance {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	done := created.Add(1500 * time.Millisecond)
	inst := &api.FuncInstance{
		ObjectMeta: api.ObjectMeta{Name: "inst-1", Namespace: "default", CreationTimestamp: &created},
		Spec:       api.FuncInstanceSpec{Function: "add", Arg: `{"x":1}`, CallbackURL: url},
		Status:     api.FuncInstanceStatus{Phase: phase, CompletionTime: &done},
	}
	if phase == api.InstanceSucceeded {
		inst.Status.Result = `{"y": 2}`
	} else {
		inst.Status.Error = "add: ZeroDivisionError"
	}
	return inst
}

func TestCallbackDeliver(t *testing.T) {
	tests := []struct {
		name          string
		codes         []int
		attempts      int
		phase         string
		wantDelivered bool
		wantAttempts  int
		wantCode      int
		wantErr       string
	}{
		{"success first try", []int{200}, 5, api.InstanceSucceeded, true, 1, 200, ""},
		{"failed instance delivered", []int{204}, 5, api.InstanceFailed, true, 1, 204, ""},
		{"500 twice then 200", []int{500, 500, 200}, 3, api.InstanceSucceeded, true, 3, 200, ""},
		{"429 is retried", []int{429, 200}, 3, api.InstanceSucceeded, true, 2, 200, ""},
		{"500 until attempts run out", []int{500}, 3, api.InstanceSucceeded, false, 3, 500, "500"},
		{"404 is final", []int{404, 200}, 5, api.InstanceSucceeded, false, 1, 404, "404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := &receiver{codes: tt.codes}
			srv := startReceiver(t, rcv)
			defer srv.Close()
			inst := endedInstance(srv.URL+"/hook?x=1", tt.phase)

			st := testCallbacks(tt.attempts).deliver(context.Background(), inst)

			if st.Delivered != tt.wantDelivered || st.Attempts != tt.wantAttempts || st.StatusCode != tt.wantCode {
				t.Fatalf("status = %+v, want delivered=%v attempts=%d code=%d",
					st, tt.wantDelivered, tt.wantAttempts, tt.wantCode)
			}
			if tt.wantErr == "" && st.Error != "" || !strings.Contains(st.Error, tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", st.Error, tt.wantErr)
			}
			if st.Time == nil {
				t.Errorf("time not set")
			}
			bodies, hdrs := rcv.got()
			if len(bodies) != tt.wantAttempts {
				t.Fatalf("receiver got %d posts, want %d", len(bodies), tt.wantAttempts)
			}
			wantBody, wantStatus := string(inst.Status.Result), "200"
			if tt.phase != api.InstanceSucceeded {
				wantBody, wantStatus = inst.Status.Error, "500"
			}
			for i := range bodies {
				if bodies[i] != wantBody {
					t.Errorf("post %d body = %q, want %q", i, bodies[i], wantBody)
				}
				for k, want := range map[string]string{
					"X-Call-Id": "inst-1", "X-Function-Name": "add", "X-Function-Status": wantStatus,
					"X-Duration-Seconds": "1.500000", "Content-Type": "application/octet-stream",
				} {
					if got := hdrs[i].Get(k); got != want {
						t.Errorf("post %d header %s = %q, want %q", i, k, got, want)
					}
				}
			}
		})
	}
}

func TestCallbackUnreachable(t *testing.T) {
	// A port that was just free: nothing listens there.
	l, err := net.Listen("tcp", receiverAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/hook"
	_ = l.Close()

	st := testCallbacks(3).deliver(context.Background(), endedInstance(url, api.InstanceSucceeded))

	if st.Delivered || st.Attempts != 3 || st.StatusCode != 0 || st.Error == "" {
		t.Fatalf("status = %+v, want 3 failed attempts with no answer and an error", st)
	}
}

func TestCallbackNoURL(t *testing.T) {
	st := testCallbacks(3).deliver(context.Background(), endedInstance("", api.InstanceSucceeded))
	if st.Delivered || st.Attempts != 0 || st.Error == "" {
		t.Fatalf("status = %+v, want no attempt and an error", st)
	}
}

func TestCallbackContextCancel(t *testing.T) {
	tests := []struct {
		name       string
		block      bool // the receiver hangs (cancel during an attempt) or answers 503 (cancel during the backoff)
		withAnswer bool // the cancel comes as the 503 is answered, before the backoff begins
	}{
		{"during an attempt", true, false},
		{"during the backoff", false, false},
		{"as the answer comes", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			rcv := &receiver{codes: []int{503}}
			if tt.block {
				rcv.block = make(chan struct{})
			}
			var h http.Handler = rcv
			if tt.withAnswer {
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					rcv.ServeHTTP(w, r)
					w.(http.Flusher).Flush()
					time.Sleep(5 * time.Millisecond) // the client has the answer
					cancel()
				})
			}
			srv := startReceiver(t, h)
			defer srv.Close()
			if tt.block {
				defer close(rcv.block) // before Close, which waits for the handlers
			}
			cb := testCallbacks(5)
			cb.backoff = time.Hour // only the cancel can end the pause

			done := make(chan api.FuncCallbackStatus, 1)
			go func() { done <- cb.deliver(ctx, endedInstance(srv.URL, api.InstanceSucceeded)) }()
			// Cancel once the first post has arrived.
			deadline := time.Now().Add(10 * time.Second)
			for b, _ := rcv.got(); len(b) == 0 && time.Now().Before(deadline); b, _ = rcv.got() {
				time.Sleep(5 * time.Millisecond)
			}
			cancel()

			var st api.FuncCallbackStatus
			select {
			case st = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("deliver did not return after its context was canceled")
			}
			if st.Delivered || st.Attempts != 1 || !strings.Contains(st.Error, "canceled") {
				t.Fatalf("status = %+v, want 1 undelivered attempt stopped by the cancel", st)
			}
		})
	}
}

func TestCallbackAttemptTimeout(t *testing.T) {
	// A receiver that never answers costs one timeout per attempt, then
	// the next attempt is made.
	rcv := &receiver{codes: []int{200}, block: make(chan struct{})}
	srv := startReceiver(t, rcv)
	defer srv.Close()
	defer close(rcv.block) // before Close, which waits for the handlers
	cb := testCallbacks(2)
	cb.timeout = 50 * time.Millisecond

	done := make(chan api.FuncCallbackStatus, 1)
	go func() { done <- cb.deliver(context.Background(), endedInstance(srv.URL, api.InstanceSucceeded)) }()
	var st api.FuncCallbackStatus
	select {
	case st = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("deliver did not give up on a receiver that never answers")
	}
	if st.Delivered || st.Attempts != 2 || !strings.Contains(st.Error, "deadline exceeded") {
		t.Fatalf("status = %+v, want 2 attempts both timed out", st)
	}
}
