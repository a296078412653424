package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"minik8s/funcserver"
	"minik8s/pkg/function"
)

// StartFuncServer runs a real funcserver (with real python3 workers)
// serving code on a free loopback port until the test ends, standing in
// for a function pod, and returns the port once it is ready.
func StartFuncServer(t testing.TB, code string, workers int) int32 {
	t.Helper()
	return StartFuncServerEnv(t, code, workers)
}

// StartFuncServerEnv is StartFuncServer with env ("KEY=VALUE") added to the
// workers' environment, as a pod's container env is: plugins
// (FUNC_PLUGINS_PRE, FUNC_PLUGINS_POST), FUNC_LOG_CAPTURE.
func StartFuncServerEnv(t testing.TB, code string, workers int, env ...string) int32 {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, function.FileFunction), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cfg := funcserver.Config{CodeDir: dir, Listener: l, Workers: workers, PodName: fmt.Sprintf("pod-%d", port), WorkerEnv: env}
		if slices.Contains(env, "FUNC_LOG_CAPTURE=off") {
			cfg.WorkerLog = io.Discard // what calls write is not the test's
		}
		if err := funcserver.Run(ctx, cfg); err != nil && ctx.Err() == nil {
			t.Errorf("funcserver: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	hc := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return int32(port)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("funcserver on %d not ready after 30s", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
