package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"minik8s/funcserver"
)

const waitFor = 60 * time.Second

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
	buildOut  []byte
)

// build compiles this command the way the runtime image gets it: without cgo.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "funcserver-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "funcserver")
		cmd := exec.Command(goTool, "build", "-o", binary, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// The runtime image is a plain Debian rootfs: the binary must need no libc.
func TestStaticBinary(t *testing.T) {
	f, err := elf.Open(build(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("binary has a %v program header: it is not static", p.Type)
		}
	}
}

func TestBadConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"no port", nil, nil, "--port: required"},
		{"port not a number", []string{"--port", "http"}, nil, "--port: not a number"},
		{"workers env not a number", []string{"--port", "0"}, []string{"FUNC_WORKERS=many"}, "env FUNC_WORKERS"},
		{"timeout env not seconds", []string{"--port", "0"}, []string{"FUNC_TIMEOUT_SECONDS=-1"}, "env FUNC_TIMEOUT_SECONDS"},
		{"negative workers", []string{"--port", "0", "--workers", "-2"}, nil, "workers: must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(build(t), tc.args...)
			cmd.Env = append(cleanEnv(), tc.env...)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
				t.Fatalf("exit %v, want status 1; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

// TestSIGTERMDrains runs the binary configured by env vars as the kubelet
// does, sends SIGTERM during a call and expects the call to finish, new
// calls to be refused and the process to exit 0.
func TestSIGTERMDrains(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "funcserver", "testdata", "errors", "function.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "function.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(build(t))
	cmd.Env = append(cleanEnv(), "PORT=0", "HOST=127.0.0.1", "FUNC_CODE_DIR="+dir, "FUNC_WORKERS=2", "POD_NAME=fn-pod-1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed once the process was reaped, with waitErr set.
	exited := make(chan struct{})
	var waitErr error
	addrs := make(chan string, 1)
	go func() {
		// Pass the log through and pick the address it listens on.
		re := regexp.MustCompile(`msg="funcserver listening" address="?([0-9.]+:[0-9]+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log(sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- m[1]
			}
		}
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	var url string
	select {
	case addr := <-addrs:
		url = "http://" + addr
	case <-time.After(waitFor):
		t.Fatal("no listening address in the log")
	}
	waitReady(t, url)

	inFlight := make(chan funcserver.Response, 1)
	go func() {
		code, r := post(t, url, "wait")
		if code != http.StatusOK {
			t.Errorf("in-flight call: %d", code)
		}
		inFlight <- r
	}()
	waitFile(t, filepath.Join(dir, "waiting"))

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitFor)
	for {
		resp, err := http.Get(url + funcserver.PathReady)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("still ready after SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, r := post(t, url, "new"); code != http.StatusServiceUnavailable || r.Error == nil || r.Error.Type != funcserver.ErrorUnavailable {
		t.Fatalf("new call while draining: %d %+v", code, r)
	}

	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-inFlight
	if r.Error != nil || r.Result != "ok wait" || r.Pod != "fn-pod-1" {
		t.Fatalf("in-flight call answered %+v", r)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("funcserver exited with %v, want status 0", waitErr)
		}
	case <-time.After(waitFor):
		t.Fatal("funcserver still runs after its last call")
	}
}

// cleanEnv is the test's environment without the variables funcserver reads.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "PORT", "HOST", "FUNC_CODE_DIR", "FUNC_WORKERS", "FUNC_TIMEOUT_SECONDS", "POD_NAME", "LOG_LEVEL":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func post(t *testing.T, url, arg string) (int, funcserver.Response) {
	resp, err := (&http.Client{Timeout: waitFor}).Post(url+funcserver.PathInvoke, "text/plain", strings.NewReader(arg))
	if err != nil {
		t.Errorf("invoke %q: %v", arg, err)
		return 0, funcserver.Response{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r funcserver.Response
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&r); err != nil {
		t.Errorf("invoke %q: decode %q: %v", arg, body, err)
	}
	return resp.StatusCode, r
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		resp, err := http.Get(url + funcserver.PathReady)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after %s: %v", waitFor, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
