package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/test/harness"
)

// TestUnderlay: nodes of an underlay reach each other at their addresses
// and nothing else: not the machine's loopback, not each other's; the
// namespaces are gone once the test ends.
func TestUnderlay(t *testing.T) {
	var names []string
	t.Run("nodes", func(t *testing.T) {
		u := StartUnderlay(t, 3)
		names = u.Namespaces()
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(harness.NetnsDir, n)); err != nil {
				t.Fatalf("namespace %s: %v", n, err)
			}
		}
		// A page served in node 3, fetched from node 1 by its address.
		l, err := u.Nodes[2].Listen("tcp", u.Nodes[2].IP+":8080")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "node 3 saw %s", strings.Split(r.RemoteAddr, ":")[0])
		})}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		resp, err := u.Nodes[0].HTTPClient().Get("http://" + u.Nodes[2].IP + ":8080/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "node 3 saw "+u.Nodes[0].IP {
			t.Errorf("node 1 fetched %q", body)
		}

		// The machine's loopback is not the node's: a listener on the
		// machine's 127.0.0.1 is out of the node's reach.
		host, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if c, err := u.Nodes[0].DialContext(ctx, "tcp", host.Addr().String()); err == nil {
			c.Close()
			t.Errorf("node 1 reached the machine's %s", host.Addr())
		}
		// Nor is there a way out: no route beyond the underlay.
		c, err := u.Nodes[0].DialContext(ctx, "tcp", "10.98.0.1:80")
		if err == nil {
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "network is unreachable") {
			t.Errorf("node 1 dialing outside the underlay: %v, want network is unreachable", err)
		}
	})
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(harness.NetnsDir, n)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("namespace %s is still there after the test (%v)", n, err)
		}
	}
}
