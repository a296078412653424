package test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// clusterCA is the pool of the cluster CA, which signs the secure port's
// certificate.
func clusterCA(t *testing.T, s *framework.APIServer) *x509.CertPool {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no certificate in the cluster CA file")
	}
	return pool
}

// TestWatchOverWebsocket: a watch asked for with a websocket upgrade sends
// one message per event, as Kubernetes' does for browsers; on the secure
// port the bearer token rides in a subprotocol (browsers cannot set
// headers on a websocket) and the answer names the other protocol
// offered; pages of other origins are refused, since the local port acts
// as the admin.
func TestWatchOverWebsocket(t *testing.T) {
	s := framework.StartSecureAPIServer(t, "alice-token,alice,u1,\"system:masters\"\nbob-token,bob,u2\n")
	ctx := context.Background()
	if _, err := s.Client.Pods("default").Create(ctx, idlePod("first")); err != nil {
		t.Fatal(err)
	}
	pool := clusterCA(t, s)
	const path = "/api/v1/namespaces/default/pods?watch=true"
	bearer := func(token string) string {
		return "base64url.bearer.authorization.k8s.io." + base64.RawURLEncoding.EncodeToString([]byte(token))
	}
	dial := func(base string, header http.Header, protocols ...string) (*websocket.Conn, *http.Response, error) {
		d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, Subprotocols: protocols, HandshakeTimeout: 10 * time.Second}
		u := "ws" + strings.TrimPrefix(base, "http") + path
		return d.Dial(u, header)
	}
	next := func(c *websocket.Conn) (string, string) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		typ, data, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if typ != websocket.TextMessage {
			t.Fatalf("message of type %d, want text", typ)
		}
		var ev struct {
			Type   string  `json:"type"`
			Object api.Pod `json:"object"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("message %q: %v", data, err)
		}
		return ev.Type, ev.Object.Name
	}

	// The local port: the current pods, then changes, one message each.
	c, _, err := dial(s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if typ, name := next(c); typ != "ADDED" || name != "first" {
		t.Fatalf("first message: %s %s", typ, name)
	}
	if _, err := s.Client.Pods("default").Create(ctx, idlePod("second")); err != nil {
		t.Fatal(err)
	}
	if typ, name := next(c); typ != "ADDED" || name != "second" {
		t.Fatalf("after a create: %s %s", typ, name)
	}
	c.Close()

	// A page of another site may not open it: the browser sends its
	// origin, and no preflight.
	if _, resp, err := dial(s.URL, http.Header{"Origin": {"http://elsewhere.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a watch from another origin: %v %v, want 403", err, resp)
	}

	// The secure port: the token in a subprotocol, the other one chosen.
	c, resp, err := dial(s.SecureURL, nil, bearer("alice-token"), "watch.minik8s.io")
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "watch.minik8s.io" {
		t.Errorf("the answer chose protocol %q", p)
	}
	if typ, name := next(c); typ != "ADDED" || (name != "first" && name != "second") {
		t.Fatalf("alice's first message: %s %s", typ, name)
	}
	c.Close()
	for _, tc := range []struct {
		name      string
		protocols []string
		code      int
	}{
		{"no token", []string{"watch.minik8s.io"}, http.StatusUnauthorized},
		{"a wrong token", []string{bearer("wrong"), "watch.minik8s.io"}, http.StatusUnauthorized},
		{"bob, who may not", []string{bearer("bob-token"), "watch.minik8s.io"}, http.StatusForbidden},
	} {
		if _, resp, err := dial(s.SecureURL, nil, tc.protocols...); err == nil || resp == nil || resp.StatusCode != tc.code {
			t.Errorf("%s: %v %v, want %d", tc.name, err, resp, tc.code)
		}
	}
	// Another site's page holding alice's token (a browser sends its
	// origin) is refused on the secure port too.
	if _, resp, err := dial(s.SecureURL, http.Header{"Origin": {"https://elsewhere.example"}}, bearer("alice-token"), "watch.minik8s.io"); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("alice's watch from another origin: %v %v, want 403", err, resp)
	}
}
