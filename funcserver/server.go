package funcserver

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/function"
	"minik8s/pkg/metrics"
)

//go:embed worker.py
var workerScript []byte

//go:embed minik8s_plugins.py
var pluginsScript []byte

//go:embed minik8s.py
var sdkScript []byte

// Readiness statuses.
const (
	statusStarting  = "starting"
	statusPreRun    = "preRun"
	statusImporting = "importing"
	statusReady     = "ready"
	// statusGeneric: no function yet; ready to be specialised.
	statusGeneric = "generic"
	statusFailed  = "failed"
	// statusRestarting: every worker died and replacements fail to import.
	statusRestarting = "restarting"
	statusDraining   = "draining"
)

// shutdownGrace bounds closing the connections once no call is in flight.
// Answers are flushed before a call counts as done, so this only waits for
// quick requests like /readyz and for connections a client opened but never
// used, which http.Server.Shutdown would otherwise wait 5 s for.
const shutdownGrace = time.Second

type server struct {
	cfg Config
	// fn is the function served: set at start, or once specialised.
	fn          atomic.Pointer[serving]
	codeDir     string
	script      string
	memoryLimit string
	runs        *metrics.Vec

	// startCtx bounds a start (ended when draining begins); starts counts
	// the starts under way, started carries their outcome to Run.
	startCtx context.Context
	starts   sync.WaitGroup
	started  chan error

	mu sync.Mutex
	// spec is what a generic server was handed; startDone is closed once
	// its start ended, with startErr.
	spec      *function.Specialization
	startDone chan struct{}
	startErr  error
	// warm is a generic server's zygote, started before its function.
	warm     *zygoteProc
	status   string
	reason   string
	draining bool
	inFlight int64
	// idle is closed once draining and no call is in flight.
	idle chan struct{}

	// acks are the calls streaming their sends, by token.
	acks sync.Map

	queued      atomic.Int64
	calls       atomic.Int64
	errors      atomic.Int64
	timeouts    atomic.Int64
	workerExits atomic.Int64
	rejected    atomic.Int64
}

// Run serves the function in cfg.CodeDir until ctx ends, then stops taking
// calls (503), lets the calls in flight finish and returns nil. A failing
// preRun or import ends Run with a *StartError when cfg.ExitOnFailure is
// set (a pod's container then stops with the cause as its termination
// message); otherwise the server stays up, not ready, and /readyz says why.
func Run(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "funcserver-")
	if err != nil {
		return fmt.Errorf("worker script dir: %w", err)
	}
	defer os.RemoveAll(dir)
	script, err := writeScripts(dir)
	if err != nil {
		return err
	}
	codeDir, err := filepath.Abs(cfg.CodeDir)
	if err != nil {
		return fmt.Errorf("code dir: %w", err)
	}

	ln := cfg.Listener
	if ln == nil {
		addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
	}
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	s := &server{
		cfg:      cfg,
		codeDir:  codeDir,
		script:   script,
		status:   statusStarting,
		idle:     make(chan struct{}),
		startCtx: startCtx,
		started:  make(chan error, 1),
		// Read once: a pod's limit does not change while it runs.
		memoryLimit: memoryLimit(),
		runs:        newRunHistogram(),
	}
	spec, err := s.specialization(ln)
	if err != nil {
		ln.Close()
		return err
	}
	// The status is set before anything is served.
	if err := s.begin(spec.saved); err != nil {
		ln.Close()
		spec.ln.Close()
		return err
	}
	var servers []*http.Server
	served := make(chan error, 2)
	serve := func(ln net.Listener, h http.Handler) {
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second}
		servers = append(servers, hs)
		go func() { served <- hs.Serve(ln) }()
	}
	serve(ln, s.routes())
	if spec.ln != nil {
		serve(spec.ln, s.specializeRoutes())
	}
	log.WithFields(log.Fields{"address": ln.Addr().String(), "codeDir": codeDir, "workers": cfg.Workers,
		"timeout": cfg.Timeout, "pod": cfg.PodName, "generic": cfg.Generic}).Info("funcserver listening")

	if s.fn.Load() != nil {
		s.starts.Add(1)
		go func() {
			defer s.starts.Done()
			_ = s.runStart()
		}()
	}

	serveErr, failed := s.wait(ctx, served)
	s.beginDrain()
	cancelStart()
	s.starts.Wait()
	s.shutdown(servers, serveErr)
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	if failed != nil {
		return &StartError{Err: failed}
	}
	log.Info("funcserver stopped")
	return nil
}

// begin sets what the server serves first: the function of its config, or,
// generic, the one it was handed before a restart, or none yet.
func (s *server) begin(saved *function.Specialization) error {
	switch {
	case !s.cfg.Generic:
		s.fn.Store(s.serving(s.cfg.FuncName, s.cfg.Timeout, s.cfg.Workers, nil))
	case saved != nil:
		if err := s.apply(saved); err != nil {
			return err
		}
		s.startDone = make(chan struct{})
	default:
		s.starts.Add(1)
		go func() {
			defer s.starts.Done()
			s.prewarm()
		}()
	}
	return nil
}

// wait serves until ctx ends, a server fails, or the start fails with
// ExitOnFailure.
func (s *server) wait(ctx context.Context, served <-chan error) (serveErr, failed error) {
	for {
		select {
		case <-ctx.Done():
			log.Info("draining: no new calls, waiting for calls in flight")
			return nil, nil
		case err := <-served:
			return err, nil
		case err := <-s.started:
			// A start cut short by the stop signal is no failure of the code:
			// its cause would be the signal.
			if err != nil && s.cfg.ExitOnFailure && ctx.Err() == nil {
				return nil, err
			}
		}
	}
}

// shutdown waits for the calls in flight, closes the servers and stops
// the workers.
func (s *server) shutdown(servers []*http.Server, serveErr error) {
	if serveErr == nil {
		<-s.idle
		shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		for _, hs := range servers {
			if err := hs.Shutdown(shutdownCtx); err != nil {
				hs.Close()
			}
		}
		cancel()
	} else {
		for _, hs := range servers {
			hs.Close()
		}
	}
	if fn := s.fn.Load(); fn != nil {
		fn.pool.close()
	}
	s.mu.Lock()
	warm := s.warm
	s.warm = nil
	s.mu.Unlock()
	if warm != nil {
		warm.kill()
	}
}

// serving is the function a server serves: its name, its call timeout and
// its workers.
type serving struct {
	name    string
	timeout time.Duration
	pool    *pool
}

func (s *server) serving(name string, timeout time.Duration, workers int, env []string) *serving {
	p := newPool(s.workerSpec(env), workers)
	s.mu.Lock()
	warm := s.warm
	s.warm = nil
	s.mu.Unlock()
	if warm != nil {
		p.zyg.adopt(warm)
	}
	return &serving{name: name, timeout: timeout, pool: p}
}

func (s *server) workerSpec(env []string) workerSpec {
	return workerSpec{python: s.cfg.Python, script: s.script, codeDir: s.codeDir,
		env: append(slices.Clip(s.cfg.WorkerEnv), env...), log: s.cfg.WorkerLog}
}

// prewarm starts the zygote a generic server's function will be forked
// from, before it is handed one; it says "generic" (ready to be
// specialised) once that is done, or failed: a specialisation without a
// warm zygote starts one, as a function's own pod does.
func (s *server) prewarm() {
	zp, err := prestart(s.startCtx, s.workerSpec(nil))
	if err != nil && s.startCtx.Err() == nil {
		log.WithError(err).Error("generic: the warm zygote did not start; a specialisation starts one")
	}
	s.mu.Lock()
	if s.spec == nil && !s.draining && zp != nil {
		s.warm, zp = zp, nil
	}
	if s.spec == nil && s.status == statusStarting {
		s.status = statusGeneric
	}
	s.mu.Unlock()
	if zp != nil {
		// Specialised meanwhile (without it) or stopping.
		zp.kill()
	}
}

// StartError is a function that cannot start: its preRun failed, its
// import failed or it defines no run. Run returns it with
// Config.ExitOnFailure.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// writeScripts writes the workers' Python into dir and returns the path
// of the one to run.
func writeScripts(dir string) (string, error) {
	script := filepath.Join(dir, "worker.py")
	if err := os.WriteFile(script, workerScript, 0o644); err != nil {
		return "", fmt.Errorf("write worker script: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "minik8s_plugins.py"), pluginsScript, 0o644); err != nil {
		return "", fmt.Errorf("write worker script: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "minik8s.py"), sdkScript, 0o644); err != nil {
		return "", fmt.Errorf("write worker script: %w", err)
	}
	return script, nil
}

// start runs preRun and imports the function in the first worker; it
// returns why it failed, if it did.
func (s *server) start(ctx context.Context, codeDir string) error {
	if _, err := os.Stat(filepath.Join(codeDir, "function.py")); err != nil {
		return s.fail(fmt.Errorf("no function to serve: %w", err))
	}
	s.setStatus(statusPreRun)
	if err := runPreRun(ctx, s.cfg.Bash, codeDir); err != nil {
		return s.fail(err)
	}
	s.setStatus(statusImporting)
	fn := s.fn.Load()
	if err := fn.pool.start(ctx); err != nil {
		return s.fail(err)
	}
	s.setStatus(statusReady)
	log.WithFields(log.Fields{"function": fn.name, "workers": fn.pool.size}).Info("function imported, ready")
	return nil
}

func (s *server) setStatus(status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// fail records why the start failed and returns it; nil while draining,
// when the start was interrupted.
func (s *server) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return nil
	}
	s.status, s.reason = statusFailed, err.Error()
	log.WithError(err).Error("function not ready")
	return err
}

func (s *server) readiness() Readiness {
	s.mu.Lock()
	status, reason, draining := s.status, s.reason, s.draining
	s.mu.Unlock()
	switch {
	case draining:
		return Readiness{Status: statusDraining, Reason: "shutting down: calls in flight finish, no new calls"}
	case status == statusGeneric:
		// Ready to be specialised; no calls until then (enter).
		return Readiness{Ready: true, Status: statusGeneric}
	case status == statusReady:
		if _, err := s.fn.Load().pool.health(); err != nil {
			return Readiness{Status: statusRestarting, Reason: "no live worker, replacements fail: " + err.Error()}
		}
		return Readiness{Ready: true, Status: statusReady}
	case status == statusFailed:
		return Readiness{Status: status, Reason: reason}
	default:
		return Readiness{Status: status, Reason: "starting: " + status}
	}
}

// enter admits a call unless the server is not ready or draining.
func (s *server) enter() (Readiness, bool) {
	r := s.readiness()
	s.mu.Lock()
	defer s.mu.Unlock()
	// Admission and the drain flag change under one lock, so a call is
	// either refused or waited for.
	if !r.Ready || r.Status != statusReady || s.draining {
		return r, false
	}
	s.inFlight++
	return r, true
}

func (s *server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if s.draining && s.inFlight == 0 {
		close(s.idle)
	}
}

func (s *server) beginDrain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return
	}
	s.draining = true
	if s.inFlight == 0 {
		close(s.idle)
	}
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathInvoke, s.handleInvoke)
	mux.HandleFunc("POST "+function.SentPath, s.handleSent)
	mux.HandleFunc("POST /{$}", s.handleInvoke)
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET "+PathReady, func(w http.ResponseWriter, _ *http.Request) {
		r := s.readiness()
		code := http.StatusOK
		if !r.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, r)
	})
	mux.HandleFunc("GET "+PathStats, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.stats())
	})
	mux.HandleFunc("GET "+PathMetrics, s.handleMetrics)
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		log.WithError(err).Debug("write answer")
		return
	}
	// On the wire before the call counts as done (see shutdownGrace).
	_ = http.NewResponseController(w).Flush()
}
