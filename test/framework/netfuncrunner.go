package framework

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"minik8s/pkg/function"
)

// NetFuncRunner is a function runner process in a node's namespace: it
// reaches the pods at their own addresses, as bin/funcrunner on a node of
// a cluster does.
type NetFuncRunner struct {
	*netProcess
	Identity string
}

// StartNetFuncRunner runs bin/funcrunner in node's namespace against the
// apiserver s (forwarded into the node); the apiserver hands it
// synchronous calls through an address exposed on the machine's loopback.
// It returns once the runner holds its Lease.
func StartNetFuncRunner(t testing.TB, node *NetNode, s *APIServer) *NetFuncRunner {
	t.Helper()
	bin := GoBinary(t, "funcrunner")
	// A port free in the node's namespace, for the calls handed over.
	l, err := node.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := &NetFuncRunner{Identity: "runner-" + RunToken() + "-" + strconv.Itoa(int(runnerSeq.Add(1))),
		netProcess: &netProcess{t: t, LogPath: filepath.Join(t.TempDir(), "funcrunner.log")}}
	r.what = "function runner " + r.Identity
	r.args = []string{"--net=" + node.Path(), bin, "--apiserver", "http://" + node.Forward(t, s.Addr),
		"--identity", r.Identity, "--address", addr, "--advertise-url", "http://" + node.Expose(t, addr)}
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
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s took no lease within 30s", r.what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
