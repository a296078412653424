package framework

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/pkg/rbac"

	"minik8s/test/harness"
)

// NetFuncRunner is a function runner process in a node's namespace: it
// reaches the pods at their own addresses, as bin/funcrunner on a node of
// a cluster does.
type NetFuncRunner struct {
	*netProcess
	Identity string
	// Address is where it serves the calls the apiserver hands it.
	Address string
	// Gateway is its function gateway (the HTTP triggers) as the test
	// process reaches it ("" when it serves none).
	Gateway string
}

// StartNetFuncRunner runs bin/funcrunner in node's namespace against the
// apiserver s (forwarded into the node); the apiserver hands it
// synchronous calls through an address exposed on the machine's loopback.
// It returns once the runner holds its Lease.
func StartNetFuncRunner(t testing.TB, node *NetNode, s *APIServer) *NetFuncRunner {
	t.Helper()
	bin := harness.GoBinary(t, "funcrunner")
	// A port free in the node's namespace, for the calls handed over.
	l, err := node.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// And one for its function gateway.
	gl, err := node.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gw := gl.Addr().(*net.TCPAddr)
	gl.Close()
	r := &NetFuncRunner{Identity: "runner-" + harness.RunToken() + "-" + strconv.Itoa(int(runnerSeq.Add(1))),
		netProcess: &netProcess{t: t, LogPath: filepath.Join(t.TempDir(), "funcrunner.log")}}
	r.what = "function runner " + r.Identity
	r.Address = addr
	r.Gateway = node.Expose(t, gw.String())
	r.args = []string{"--net=" + node.Path(), bin, "--apiserver", "http://" + node.Forward(t, s.Addr),
		"--identity", r.Identity, "--address", addr, "--advertise-url", "http://" + node.Expose(t, addr),
		"--gateway-port", strconv.Itoa(gw.Port)}
	r.run(t, s)
	return r
}

// StartSecureNetFuncRunner runs bin/funcrunner in node's namespace as a
// node of a cluster runs one: on the secure port of s at server (as the
// node reaches it, AdvertisedURL), with a kubeconfig holding a
// certificate of the cluster CA for system:funcrunner:IDENTITY in
// system:funcrunners (as minik8s up issues its runner's), serving the
// calls handed to it over TLS at the node's address (which the apiserver
// reaches through the machine's loopback). The rest is bin/funcrunner's
// defaults.
func StartSecureNetFuncRunner(t testing.TB, node *NetNode, s *APIServer, server string) *NetFuncRunner {
	t.Helper()
	bin := harness.GoBinary(t, "funcrunner")
	l, err := node.Listen("tcp", net.JoinHostPort(node.IP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	r := &NetFuncRunner{Identity: "runner-" + harness.RunToken() + "-" + strconv.Itoa(int(runnerSeq.Add(1))), Address: addr,
		netProcess: &netProcess{t: t, LogPath: filepath.Join(dir, "funcrunner.log")}}
	r.what = "function runner " + r.Identity
	cc, err := apiserver.ClientConfigFor(s.DataDir, server, "system:funcrunner:"+r.Identity, rbac.FuncRunnersGroup)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "funcrunner.kubeconfig")
	if err := client.WriteKubeconfig(kubeconfig, "minik8s-funcrunner", cc); err != nil {
		t.Fatal(err)
	}
	r.args = []string{"--net=" + node.Path(), bin, "--kubeconfig", kubeconfig,
		"--identity", r.Identity, "--address", addr, "--advertise-url", "https://" + node.Expose(t, addr)}
	r.run(t, s)
	return r
}

// run starts the runner and waits until it holds its Lease.
func (r *NetFuncRunner) run(t testing.TB, s *APIServer) {
	t.Helper()
	r.Start()
	t.Cleanup(func() {
		r.Kill()
		if t.Failed() {
			r.logTail()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.Client.Leases(function.RunnerNamespace).Get(context.Background(), function.RunnerLeaseName(r.Identity)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s took no lease within 30s", r.what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
