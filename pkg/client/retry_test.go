package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"minik8s/pkg/errdefs"
)

// A request the server sheds (429 with Retry-After) is sent again, body
// and all, until it is taken; without Retry-After, or past the retries,
// the 429 is the answer.
func TestSendRetriesShedRequests(t *testing.T) {
	for _, tc := range []struct {
		name       string
		shed       int32 // 429s before the server takes it
		retryAfter string
		wantErr    bool
		wantTries  int32
	}{
		{"taken after two 429s", 2, "0", false, 3},
		{"no Retry-After", 1, "", true, 1},
		{"past the retries", 100, "0", true, maxRetries429 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tries atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := tries.Add(1)
				if body, _ := io.ReadAll(r.Body); string(body) != "arg" {
					t.Errorf("try %d got body %q", n, body)
				}
				if n <= tc.shed {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					w.WriteHeader(http.StatusTooManyRequests)
					io.WriteString(w, `{"error":"busy","reason":"TooManyRequests","code":429}`)
					return
				}
				io.WriteString(w, `{}`)
			}))
			defer srv.Close()
			err := New(srv.URL).Do(context.Background(), http.MethodPost, "/x", []byte("arg"), nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errdefs.IsTooManyRequests(err) {
				t.Fatalf("err = %v, want TooManyRequests", err)
			}
			if got := tries.Load(); got != tc.wantTries {
				t.Fatalf("%d tries, want %d", got, tc.wantTries)
			}
		})
	}
}
