package funcserver

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/pkg/pki"
	"minik8s/pkg/rbac"
)

// testCA is a cluster CA with the client certificates the tests present.
type testCA struct {
	pem              []byte
	runner, nodeCert tls.Certificate
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	issue := func(cn, group string) tls.Certificate {
		certPEM, keyPEM, err := ca.Issue(pki.CertSpec{CommonName: cn, Organization: []string{group}, Client: true})
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return &testCA{pem: ca.CertPEM, runner: issue("system:funcrunner:n1", rbac.FuncRunnersGroup),
		nodeCert: issue("system:node:n1", rbac.NodesGroup)}
}

type genericServer struct {
	*testServer
	specURL string
	ca      *testCA
}

// startGeneric starts a generic server on codeDir (a fresh one if empty).
func startGeneric(t *testing.T, ca *testCA, codeDir string, configure func(*Config)) *genericServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if codeDir == "" {
		codeDir = t.TempDir()
	}
	s := start(t, "plain", func(c *Config) {
		c.Generic, c.CodeDir, c.SpecializeListener, c.CAPEM = true, codeDir, ln, ca.pem
		if configure != nil {
			configure(c)
		}
	})
	s.dir = codeDir
	return &genericServer{testServer: s, specURL: "https://" + ln.Addr().String() + function.SpecializePath, ca: ca}
}

// specialize posts sp with cert (none when nil) and returns the status
// and the body.
func (g *genericServer) specialize(cert *tls.Certificate, sp any) (int, string, error) {
	g.t.Helper()
	tr := &tls.Config{InsecureSkipVerify: true} // the pod's certificate is its own; see specialize.go
	if cert != nil {
		tr.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tr}, Timeout: waitFor}
	defer c.CloseIdleConnections()
	b, err := json.Marshal(sp)
	if err != nil {
		g.t.Fatal(err)
	}
	resp, err := c.Post(g.specURL, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.String(), nil
}

func plainSpec(code string) *function.Specialization {
	return &function.Specialization{Func: "hello", CodeHash: "h1",
		Files: map[string]string{function.FileFunction: code, function.FilePreRun: ""},
		Env:   []api.EnvVar{{Name: "FUNC_NAME", Value: "hello"}, {Name: "FUNC_WORKERS", Value: "3"}}}
}

const plainCode = "def run(arg):\n    return 'hello ' + arg\n"

func TestSpecialize(t *testing.T) {
	g := startGeneric(t, newTestCA(t), "", nil)
	g.waitStatus(func(r Readiness) bool { return r.Status != statusStarting })
	if code, r := g.readiness(); code != http.StatusOK || r.Status != statusGeneric {
		t.Fatalf("a generic server's readiness: %d %+v, want 200 %s", code, r, statusGeneric)
	}
	if code, r, err := g.post(PathInvoke, "x", nil); err != nil || code != http.StatusServiceUnavailable || r.Error == nil {
		t.Fatalf("a call before specialisation: %d %+v %v, want 503", code, r, err)
	}

	// Only function runners of the cluster CA may hand it code.
	if _, _, err := g.specialize(nil, plainSpec(plainCode)); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	if code, body, err := g.specialize(&g.ca.nodeCert, plainSpec(plainCode)); err != nil || code != http.StatusForbidden ||
		!strings.Contains(body, "system:node:n1") {
		t.Fatalf("a node's specialisation: %d %s %v, want 403 naming it", code, body, err)
	}
	other := newTestCA(t)
	if _, _, err := g.specialize(&other.runner, plainSpec(plainCode)); err == nil {
		t.Fatal("a runner of another CA was served")
	}

	for _, tc := range []struct {
		name  string
		edit  func(*function.Specialization)
		field string
	}{
		{"path", func(sp *function.Specialization) { sp.Files["../evil.py"] = "x" }, "files.../evil.py"},
		{"spec file", func(sp *function.Specialization) { sp.Files[specFile] = "{}" }, "files." + specFile},
		{"no code", func(sp *function.Specialization) { delete(sp.Files, function.FileFunction) }, "files: function.py"},
		{"env", func(sp *function.Specialization) {
			sp.Env = append(sp.Env, api.EnvVar{Name: "LD_PRELOAD", Value: "/x.so"})
		}, "LD_PRELOAD"},
		{"no hash", func(sp *function.Specialization) { sp.CodeHash = "" }, "codeHash"},
	} {
		sp := plainSpec(plainCode)
		tc.edit(sp)
		if code, body, err := g.specialize(&g.ca.runner, sp); err != nil || code != http.StatusBadRequest || !strings.Contains(body, tc.field) {
			t.Errorf("%s: %d %s %v, want 400 naming %s", tc.name, code, body, err, tc.field)
		}
	}
	if code, r := g.readiness(); code != http.StatusOK || r.Status != statusGeneric {
		t.Fatalf("after refused specialisations: %d %+v, want still generic", code, r)
	}

	code, body, err := g.specialize(&g.ca.runner, plainSpec(plainCode))
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"ready":true`) {
		t.Fatalf("specialise: %d %s %v", code, body, err)
	}
	if got := g.invokeOK("x"); got != "hello x" {
		t.Fatalf("result %q", got)
	}
	if st := g.stats(); st.Workers != 3 {
		t.Errorf("workers %d, want the specialization's 3", st.Workers)
	}
	// The same again is no change; another function is a conflict.
	if code, body, err := g.specialize(&g.ca.runner, plainSpec(plainCode)); err != nil || code != http.StatusOK {
		t.Fatalf("the same specialisation again: %d %s %v", code, body, err)
	}
	sp := plainSpec("def run(arg):\n    return 'other'\n")
	sp.CodeHash = "h2"
	if code, body, err := g.specialize(&g.ca.runner, sp); err != nil || code != http.StatusConflict || !strings.Contains(body, "h1") {
		t.Fatalf("another specialisation: %d %s %v, want 409 naming the code served", code, body, err)
	}
	if got := g.invokeOK("y"); got != "hello y" {
		t.Fatalf("result after a refused specialisation %q", got)
	}
}

// A restarted container finds the function it was handed in its code dir
// (an emptyDir) and serves it without being asked again.
func TestSpecializedSurvivesRestart(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	g := startGeneric(t, ca, dir, nil)
	if code, body, err := g.specialize(&ca.runner, plainSpec(plainCode)); err != nil || code != http.StatusOK {
		t.Fatalf("specialise: %d %s %v", code, body, err)
	}
	g.cancel()
	if err := <-g.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	g.done <- nil // for the first server's cleanup

	g2 := startGeneric(t, ca, dir, nil)
	g2.waitStatus(func(r Readiness) bool { return r.Ready && r.Status == statusReady })
	if got := g2.invokeOK("again"); got != "hello again" {
		t.Fatalf("result after the restart %q", got)
	}
	if code, _, err := g2.specialize(&ca.runner, plainSpec(plainCode)); err != nil || code != http.StatusOK {
		t.Fatalf("the same specialisation after the restart: %d %v", code, err)
	}
}

// Broken code is answered 422 with its error, and the server ends as a
// pod's does, so that its pod says why.
func TestSpecializeBrokenCode(t *testing.T) {
	ca := newTestCA(t)
	g := startGeneric(t, ca, "", func(c *Config) { c.ExitOnFailure = true })
	code, body, err := g.specialize(&ca.runner, plainSpec("def run(arg)\n    return 1\n"))
	if err != nil || code != http.StatusUnprocessableEntity || !strings.Contains(body, "SyntaxError") {
		t.Fatalf("broken code: %d %s %v, want 422 naming the SyntaxError", code, body, err)
	}
	select {
	case err := <-g.done:
		var se *StartError
		if !errors.As(err, &se) {
			t.Fatalf("Run returned %v, want a StartError", err)
		}
		g.done <- nil
	case <-time.After(waitFor):
		t.Fatal("Run did not end after the failed start")
	}
}

// A generic server forks its function's workers from the zygote it
// started before it was handed the function: no interpreter is started
// on the call's path.
func TestSpecializeUsesWarmZygote(t *testing.T) {
	ca := newTestCA(t)
	g := startGeneric(t, ca, "", nil)
	g.waitStatus(func(r Readiness) bool { return r.Status == statusGeneric })
	before := pythonChildren(t)
	if len(before) == 0 {
		t.Fatal("no warm zygote runs")
	}
	sp := plainSpec("import os\n\ndef run(arg):\n    return str(os.getppid())\n")
	if code, body, err := g.specialize(&ca.runner, sp); err != nil || code != http.StatusOK {
		t.Fatalf("specialise: %d %s %v", code, body, err)
	}
	zygote := g.invokeOK("x")
	if !before[zygote] {
		t.Fatalf("the worker's parent %s is no zygote started before the specialisation (%v)", zygote, before)
	}
}

// pythonChildren are the pids of this process's children.
func pythonChildren(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	out := map[string]bool{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ")".
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == me {
			out[e.Name()] = true
		}
	}
	return out
}
