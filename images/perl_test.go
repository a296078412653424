package images

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	"minik8s/pkg/function"
)

// startPerlExample runs the embedded script with the machine's perl, as
// the image's entrypoint runs it, and returns its base URL.
func startPerlExample(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("no perl on this machine")
	}
	script := filepath.Join(t.TempDir(), "function.pl")
	if err := os.WriteFile(script, perlFunction, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(perl, script)
	cmd.Env = []string{"PORT=" + strconv.Itoa(port), "HOST=127.0.0.1", "POD_NAME=perl-pod", "FUNC_NAME=shout"}
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("function.pl said:\n%s", logs.String())
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("function.pl not ready after 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func invokePerl(t *testing.T, url, arg string, header map[string]string) function.Result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+function.InvokePath, strings.NewReader(arg))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke %q: %s %s", arg, resp.Status, body)
	}
	var res function.Result
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("invoke %q: %v in %s", arg, err, body)
	}
	return res
}

func TestPerlExampleServesTheContract(t *testing.T) {
	url, cmd := startPerlExample(t)
	yes, no := true, false
	tests := []struct {
		name, arg, result string
		check             *bool
		errType, errMsg   string
	}{
		{"shouted once: left", "hello", "HELLO!", &yes, "", ""},
		{"shouted twice: right", "HELLO! and python", "HELLO! AND PYTHON!", &no, "", ""},
		{"a number stays a string", "42", "42!", &yes, "", ""},
		{"empty", "", "!", &yes, "", ""},
		{"text, not bytes", "grüße 😀", "GRÜSSE 😀!", &yes, "", ""},
		{"quotes and control characters", "a\"b\\c\n\t\x01", "A\"B\\C\n\t\x01!", &yes, "", ""},
		{"raises", "fail", "", nil, "PerlError", "asked to fail"},
	}
	for _, tc := range tests {
		res := invokePerl(t, url, tc.arg, nil)
		if string(res.Result) != tc.result || !res.HasCheck || fmt.Sprint(deref(res.Check)) != fmt.Sprint(deref(tc.check)) || res.Pod != "perl-pod" {
			t.Errorf("%s: got %+v (check %v), want result %q check %v", tc.name, res, deref(res.Check), tc.result, deref(tc.check))
		}
		if tc.errType == "" {
			if res.Error != nil || !strings.Contains(res.Output, "perl v5") {
				t.Errorf("%s: error %v, output %q", tc.name, res.Error, res.Output)
			}
			continue
		}
		if res.Error == nil || res.Error.Type != tc.errType || res.Error.Message != tc.errMsg || !strings.Contains(res.Error.Trace, "main::run") {
			t.Errorf("%s: error %+v, want %s: %s with a trace through main::run", tc.name, res.Error, tc.errType, tc.errMsg)
		}
	}

	// The call's context, JSON in a header, is read.
	ctx := `{"function-name":"shout","namespace":"default","timeout":60,"config":{"k":"v\"w"},"instance-id":"x"}`
	if res := invokePerl(t, url, "hi", map[string]string{function.HeaderContext: ctx}); !strings.HasPrefix(res.Output, "called as shout\n") {
		t.Errorf("with a context: output %q", res.Output)
	}

	// POST / is a call too; probes and unknown paths answer as the contract says.
	for _, r := range []struct {
		method, path string
		code         int
	}{{"POST", "/", 200}, {"GET", "/readyz", 200}, {"GET", "/healthz", 200}, {"GET", "/invoke", 405}, {"GET", "/nope", 404}} {
		req, _ := http.NewRequest(r.method, url+r.path, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != r.code {
			t.Errorf("%s %s: %d, want %d", r.method, r.path, resp.StatusCode, r.code)
		}
	}

	// A connection that sends half a request holds up no other.
	stalled, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	fmt.Fprintf(stalled, "POST /invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
	done := make(chan function.Result, 1)
	go func() { done <- invokePerlNoFatal(url, "other") }()
	select {
	case res := <-done:
		if res.Result != "OTHER!" {
			t.Errorf("beside a stalled connection: %+v", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled connection held up another call")
	}

	// TERM stops it (it is PID 1 of its container), idle connections and all.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after TERM: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("function.pl still running 5s after TERM")
	}
}

func invokePerlNoFatal(url, arg string) function.Result {
	var res function.Result
	resp, err := http.Post(url+function.InvokePath, "application/octet-stream", strings.NewReader(arg))
	if err != nil {
		res.Result = api.Bytes(err.Error())
		return res
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&res)
	return res
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
