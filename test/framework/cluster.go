package framework

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/apiserver/funcapi"
	"minik8s/controller"
	"minik8s/funcrunner"
	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/scheduler"

	"minik8s/test/containerdtest"
	"minik8s/test/harness"
)

// StartControllers runs the controller manager in the test process until
// the test ends, as the admin (the local port) unless cfg names a client.
func StartControllers(t testing.TB, s *APIServer, cfg controller.Config) {
	t.Helper()
	if cfg.Client == nil {
		cfg.Client = s.Client
	}
	runUntilCleanup(t, "controller manager", func(ctx context.Context) error { return controller.Run(ctx, cfg) })
}

// StartScheduler runs a scheduler in the test process until the test ends.
func StartScheduler(t testing.TB, s *APIServer, cfg scheduler.Config) {
	t.Helper()
	cfg.Client = s.Client
	runUntilCleanup(t, "scheduler", func(ctx context.Context) error { return scheduler.Run(ctx, cfg) })
}

func runUntilCleanup(t testing.TB, name string, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s stopped with error: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop within 30s", name)
		}
	})
}

// Cluster is a whole control plane (apiserver, controllers, scheduler) and
// kubelets sharing one private containerd, as end-to-end tests and
// benchmarks of node failure run it.
type Cluster struct {
	Containerd *containerdtest.Containerd
	APIServer  *APIServer
	Kubelets   map[string]*Kubelet
}

// StartCluster starts n nodes named PREFIX-1…PREFIX-n on 127.0.0.(firstIP+i)
// with the controllers configured by cc; everything stops when t ends.
// Images are the caller's to import.
func StartCluster(t testing.TB, cc controller.Config, prefix string, n, firstIP int) *Cluster {
	t.Helper()
	c := &Cluster{Containerd: containerdtest.StartContainerd(t), APIServer: StartAPIServer(t), Kubelets: map[string]*Kubelet{}}
	StartControllers(t, c.APIServer, cc)
	StartScheduler(t, c.APIServer, scheduler.Config{})
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		c.Kubelets[name] = StartKubelet(t, c.APIServer.URL, c.Containerd, name, fmt.Sprintf("127.0.0.%d", firstIP+i))
	}
	return c
}

// FuncRunner is a function runner running in the test process.
type FuncRunner struct {
	Identity string
	cancel   context.CancelCauseFunc
	done     chan error
	unlocal  func()
}

// StartFuncRunner runs a function runner against s until the test ends;
// the apiserver hands it synchronous calls over HTTP, as to a bin/funcrunner.
func StartFuncRunner(t testing.TB, s *APIServer) *FuncRunner {
	t.Helper()
	return startFuncRunner(t, s, false, nil)
}

// StartFuncRunnerWith starts a runner as StartFuncRunner does, its config
// changed by configure first (a gateway, a NATS URL).
func StartFuncRunnerWith(t testing.TB, s *APIServer, configure func(*funcrunner.Config)) *FuncRunner {
	t.Helper()
	return startFuncRunner(t, s, false, configure)
}

// StartLocalFuncRunner runs a function runner that s hands synchronous
// calls to in process, as minik8s up wires its first runner.
func StartLocalFuncRunner(t testing.TB, s *APIServer) *FuncRunner {
	t.Helper()
	return startFuncRunner(t, s, true, nil)
}

func startFuncRunner(t testing.TB, s *APIServer, local bool, configure func(*funcrunner.Config)) *FuncRunner {
	t.Helper()
	r := &FuncRunner{Identity: "runner-" + harness.RunToken() + "-" + strconv.Itoa(int(runnerSeq.Add(1))), done: make(chan error, 1)}
	ctx, cancel := context.WithCancelCause(context.Background())
	r.cancel = cancel
	cfg := funcrunner.Config{Client: s.Client, Identity: r.Identity}
	if configure != nil {
		configure(&cfg)
	}
	fr := funcrunner.New(cfg)
	if local {
		s.local.set(fr)
		r.unlocal = func() { s.local.clear(fr) }
	}
	go func() { r.done <- fr.Run(ctx) }()
	t.Cleanup(func() { r.stop(t, nil) })
	// Ready once its Lease is there: calls are handed to it from then on.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.Client.Leases(function.RunnerNamespace).Get(context.Background(), function.RunnerLeaseName(r.Identity)); err == nil {
			return r
		}
		select {
		case err := <-r.done:
			r.cancel = nil
			t.Fatalf("function runner %s exited while starting: %v", r.Identity, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("function runner %s took no lease within 30s", r.Identity)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// localRunner is the apiserver's in-process runner, set when a test starts one.
type localRunner struct {
	p atomic.Pointer[funcrunner.Runner]
}

var _ funcapi.CallRunner = (*localRunner)(nil)

func (l *localRunner) set(r *funcrunner.Runner) { l.p.Store(r) }

func (l *localRunner) clear(r *funcrunner.Runner) { l.p.CompareAndSwap(r, nil) }

func (l *localRunner) Call(ctx context.Context, req function.CallRequest) (*api.FuncInstance, error) {
	r := l.p.Load()
	if r == nil {
		return nil, function.ErrNotServing
	}
	return r.Call(ctx, req)
}

var runnerSeq atomic.Int32

// Kill stops the runner as SIGKILL would: its Lease and claims are left
// to expire.
func (r *FuncRunner) Kill(t testing.TB) { r.stop(t, function.ErrAbandoned) }

// Stop stops the runner gracefully: it releases its Lease and claims.
func (r *FuncRunner) Stop(t testing.TB) { r.stop(t, nil) }

func (r *FuncRunner) stop(t testing.TB, cause error) {
	if r.cancel == nil {
		return
	}
	if r.unlocal != nil {
		r.unlocal()
	}
	r.cancel(cause)
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("function runner %s stopped with error: %v", r.Identity, err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("function runner %s did not stop within 30s", r.Identity)
	}
}
