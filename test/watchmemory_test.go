package test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

// rssBytes is a process's resident memory, from /proc.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// silentWatch opens a watch on a connection that reads nothing past the
// answer's headers, with a small receive buffer so the kernel holds little
// for it: the server holds the rest. It returns the answer's status.
func silentWatch(t *testing.T, addr, path string) (net.Conn, int) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		_ = c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
	// The headers only: one byte at a time, so nothing of the body is read.
	var head []byte
	one := make([]byte, 1)
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := conn.Read(one); err != nil {
			t.Fatalf("watch %d: reading its answer's headers: %v (%q)", len(head), err, head)
		}
		head = append(head, one[0])
	}
	f := strings.Fields(string(head))
	code, _ := strconv.Atoi(f[1])
	return conn, code
}

// TestWatchersThatReadNothingStayBounded: 100 watches of a namespace
// holding two 1 MB ConfigMaps, on connections that read nothing, leave the
// apiserver's RSS (a real bin/apiserver process, read from /proc) within
// 200 MB of where it started; meanwhile another user's watch that reads
// gets every change of a burst of large objects on one connection (it is
// never cut off), and the server answers.
func TestWatchersThatReadNothingStayBounded(t *testing.T) {
	root := moduleRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "apiserver")
	build := exec.Command("go", "build", "-o", bin, "./cmd/apiserver")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/apiserver: %v\n%s", err, out)
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("reader-token,reader,1,\"system:masters\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port, securePort := freePort(t), freePort(t)
	data := filepath.Join(dir, "data")
	p := startBinary(t, "apiserver", dir, filepath.Join(dir, "apiserver.log"), nil, syscall.SIGKILL, bin,
		"--port", strconv.Itoa(port), "--secure-port", strconv.Itoa(securePort), "--bind-address", "127.0.0.1",
		"--data-dir", data, "--token-auth-file", tokens, "--log-level", "warn")
	t.Cleanup(func() { p.stop(t, 30*time.Second) })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := client.New("http://" + addr)
	ctx := context.Background()
	waitUntil(t, time.Minute, "the apiserver answering", func() bool {
		if ok, err := p.exited(); ok {
			t.Fatalf("apiserver exited: %v\n%s", err, p.logTail())
		}
		return c.Healthy(ctx) == nil
	})
	// '<' takes six bytes in a watch's JSON (\u003c) and one in the
	// body and in etcd: 2 MB of objects are 12 MB on the wire, more than
	// the kernel's socket buffers take.
	for _, name := range []string{"big-1", "big-2"} {
		body := `{"metadata":{"name":"` + name + `"},"data":{"v":"` + strings.Repeat("<", 1000000) + `"}}`
		if code, data := httpDo(t, "POST", "http://"+addr+"/api/v1/namespaces/default/configmaps", "application/json", []byte(body)); code != http.StatusCreated {
			t.Fatalf("create %s: %d %.300s", name, code, data)
		}
	}
	value := strings.Repeat("x", 500000)
	if _, _, err := c.ConfigMaps("default").List(ctx, client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	base := rssBytes(t, p.cmd.Process.Pid)

	// The reader: another user, on the secure port, reading as events come.
	ca, err := os.ReadFile(filepath.Join(data, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/api/v1/namespaces/burst/configmaps?watch=true&resourceVersion=1", securePort), nil)
	req.Header.Set("Authorization", "Bearer reader-token")
	if _, err := c.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: "burst"}}); err != nil {
		t.Fatal(err)
	}

	var conns []net.Conn
	accepted := 0
	for range 100 {
		conn, code := silentWatch(t, addr, "/api/v1/namespaces/default/configmaps?watch=true")
		conns = append(conns, conn)
		switch code {
		case http.StatusOK:
			accepted++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("a silent watch: %d", code)
		}
	}
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	// Every watch has had its answer: what the server holds for them is
	// held now (the writes block), read a few times over.
	var peak int64
	for range 10 {
		peak = max(peak, rssBytes(t, p.cmd.Process.Pid))
		if err := c.Healthy(ctx); err != nil {
			t.Fatalf("the apiserver with 100 silent watches: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d of 100 silent watches accepted; RSS %d MB before, at most %d MB with them", accepted, base>>20, peak>>20)
	if peak-base > 200<<20 {
		t.Fatalf("100 silent watches over 2 MB of objects grew the apiserver from %d MB to %d MB, more than 200 MB", base>>20, peak>>20)
	}

	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the reader's watch: %d", resp.StatusCode)
	}
	const burst = 40
	go func() {
		for i := range burst {
			cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("b-%d", i)}, Data: map[string]string{"v": value}}
			if _, err := c.ConfigMaps("burst").Create(ctx, cm); err != nil {
				t.Errorf("burst %d: %v", i, err)
				return
			}
		}
	}()
	r := bufio.NewReaderSize(resp.Body, 1<<20)
	for i := range burst {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("the reader's watch ended after %d of %d events: %v", i, burst, err)
		}
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.Type != "ADDED" {
			t.Fatalf("the reader's event %d: %.200s", i, line)
		}
	}
}

// freePort is a TCP port free on loopback now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
