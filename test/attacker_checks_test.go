package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// nothingLanded: what the attackers tried left nothing behind.
func (c *attackCluster) nothingLanded(t *testing.T) {
	ctx := context.Background()
	t.Run("no privileged pod", func(t *testing.T) {
		for _, p := range c.pods.seen() {
			t.Errorf("a privileged pod appeared: %s", p)
		}
	})
	t.Run("no pwn object", func(t *testing.T) {
		for _, res := range api.Resources {
			code, data := httpDo(t, "GET", c.s.URL+res.Path("", ""), "", nil)
			if code != http.StatusOK {
				t.Fatalf("listing %s: %d %s", res.Name, code, data)
			}
			var list struct {
				Items []struct{ Metadata api.ObjectMeta } `json:"items"`
			}
			if err := json.Unmarshal(data, &list); err != nil {
				t.Fatalf("listing %s: %v", res.Name, err)
			}
			for _, o := range list.Items {
				if strings.HasPrefix(o.Metadata.Name, "pwn") {
					t.Errorf("%s %s/%s exists: an attempt to make it succeeded", res.Kind, o.Metadata.Namespace, o.Metadata.Name)
				}
			}
		}
	})
	t.Run("no write of theirs succeeded in the audit log", func(t *testing.T) { c.auditClean(t) })
	t.Run("no receiver got a connection", func(t *testing.T) {
		for _, got := range c.recv.got() {
			t.Errorf("a receiver only a callback could reach got a connection: %s", got)
		}
		p, err := c.s.Client.Pods("b").Get(ctx, "sink")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(podLog(c.kubeletOf(p.Spec.NodeName), p), "\n") {
			if strings.Contains(line, "REQUEST") && !strings.Contains(line, " /control ") {
				t.Errorf("pod b/sink, which only the attacking pods' controls may reach, got: %s", line)
			}
		}
	})
	t.Run("the kubernetes Service leads to the apiserver", func(t *testing.T) {
		ep, err := c.s.Client.Endpoints("default").Get(ctx, "kubernetes")
		if err != nil || len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 || ep.Subsets[0].Addresses[0].IP != c.cp.IP {
			t.Errorf("the kubernetes Service's endpoints: %+v %v, want the apiserver at %s", ep, err, c.cp.IP)
		}
		svcs, _, err := c.s.Client.Services("").List(ctx, client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, svc := range svcs {
			if svc.Spec.ClusterIP == c.kubernetesIP && (svc.Namespace != "default" || svc.Name != "kubernetes") {
				t.Errorf("Service %s/%s took the kubernetes Service's address %s", svc.Namespace, svc.Name, c.kubernetesIP)
			}
		}
	})
}

func (c *attackCluster) kubeletOf(node string) *framework.NetKubelet {
	for _, k := range c.kubelets {
		if k.Name == node {
			return k
		}
	}
	return c.kubelets[0]
}

// auditEvent is what the tests read of a line of the audit log.
type auditEvent struct {
	Verb       string
	RequestURI string
	User       struct{ Username string }
	ObjectRef  *struct{ Resource, Namespace, Name, Subresource string }
	Response   struct{ Code int } `json:"responseStatus"`
}

// auditLog reads the audit log (flushed every 200 ms).
func (c *attackCluster) auditLog(t *testing.T) []auditEvent {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.s.DataDir, apiserver.AuditLogFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []auditEvent
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("audit line %s: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// audited are the answers' codes of user's writes (verb) of resource in ns.
func (c *attackCluster) audited(t *testing.T, user, verb, resource, ns string) []int {
	var codes []int
	for _, e := range c.auditLog(t) {
		if e.User.Username == user && e.Verb == verb && e.ObjectRef != nil && e.ObjectRef.Resource == resource && e.ObjectRef.Namespace == ns {
			codes = append(codes, e.Response.Code)
		}
	}
	return codes
}

// auditClean reads the audit log: no write of the invoker, the edit user
// or the pods' service account succeeded but those they may make: calls
// of a's functions; the edit user's creates in a (checked by name
// elsewhere: no pwn- object exists) and its writes of its ctl- objects.
func (c *attackCluster) auditClean(t *testing.T) {
	var events int
	for _, e := range c.auditLog(t) {
		who := e.User.Username
		if who != attackInvoker && who != attackEditor && who != attackProber {
			continue
		}
		events++
		if e.Response.Code >= 300 {
			continue
		}
		ref := e.ObjectRef
		switch {
		case ref == nil:
		case who == attackInvoker && ref.Namespace == "a" && ref.Resource == "funcs" && ref.Subresource == "invoke":
			continue
		case who == attackEditor && ref.Namespace == "a" && ref.Subresource == "" && (e.Verb == "create" || strings.HasPrefix(ref.Name, "ctl-")):
			continue
		}
		t.Errorf("the audit log holds a write of %s that succeeded: %s %s (%d)", who, e.Verb, e.RequestURI, e.Response.Code)
	}
	if events == 0 {
		t.Errorf("the audit log holds nothing of the attackers: the check proves nothing")
	}
}

// privilegedPods records every pod seen that reaches into its node.
type privilegedPods struct {
	mu  sync.Mutex
	got []string
}

func watchPrivilegedPods(t *testing.T, c *client.Client) *privilegedPods {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &privilegedPods{}
	events := c.Pods("").Watch(ctx, client.ListOptions{})
	go func() {
		for ev := range events {
			p := ev.Object
			if data := mustJSON(p.Spec); strings.Contains(data, `"hostNetwork":true`) || strings.Contains(data, `"hostPath"`) ||
				strings.Contains(data, `"hostPort"`) {
				w.mu.Lock()
				w.got = append(w.got, p.Namespace+"/"+p.Name+": "+data)
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *privilegedPods) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// receivers listen where only a callback the guard let through could
// connect, and record every connection.
type receivers struct {
	mu   sync.Mutex
	conn []string
	// addr names each receiver's address by what it stands for.
	addr map[string]string
}

// startReceivers listens on node 1's loopback and address, on the cloud
// metadata address (given to node 1's loopback), on node 2's address, on
// each node's pod gateway and on the control plane's address.
func startReceivers(t *testing.T, c *attackCluster) *receivers {
	r := &receivers{addr: map[string]string{}}
	n1, n2 := c.nodes[0], c.nodes[1]
	out, err := n1.Command(context.Background(), "ip", "addr", "add", "169.254.169.254/32", "dev", "lo").CombinedOutput()
	if err != nil {
		t.Fatalf("the metadata address on node 1: %v: %s", err, out)
	}
	for _, l := range []struct {
		what string
		node *framework.NetNode
		addr string
	}{
		{"node 1's loopback", n1, "127.0.0.1:0"},
		{"node 1's address", n1, n1.IP + ":0"},
		{"the metadata address", n1, "169.254.169.254:80"},
		{"node 2's address", n2, n2.IP + ":0"},
		{"node 1's pod gateway", n1, c.gateway["atk-1"] + ":0"},
		{"node 2's pod gateway", n2, c.gateway["atk-2"] + ":0"},
		{"the control plane's address", c.cp, c.cp.IP + ":0"},
	} {
		var ln net.Listener
		err := l.node.Do(func() (err error) {
			// The gateway is the bridge's once a pod is set up there.
			lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
				var serr error
				err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_IP, syscall.IP_FREEBIND, 1) })
				return errors.Join(err, serr)
			}}
			ln, err = lc.Listen(context.Background(), "tcp", l.addr)
			return err
		})
		if err != nil {
			t.Fatalf("a receiver on %s (%s): %v", l.what, l.addr, err)
		}
		r.addr[l.what] = ln.Addr().String()
		t.Cleanup(func() { ln.Close() })
		go func(what string) {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				r.mu.Lock()
				r.conn = append(r.conn, fmt.Sprintf("%s (%s) from %s", what, ln.Addr(), conn.RemoteAddr()))
				r.mu.Unlock()
				conn.Close()
			}
		}(l.what)
	}
	return r
}

func (r *receivers) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.conn)
}
