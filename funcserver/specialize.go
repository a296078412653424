package funcserver

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
	"minik8s/pkg/pki"
	"minik8s/pkg/rbac"
)

// A generic server (Config.Generic) starts with no function and is handed
// one on its specialise port:
//
//	POST /specialize   body: a function.Specialization (JSON)
//	    200 Readiness once the function serves; 422 with the reason when
//	    its preRun or import failed (the server then ends, with
//	    ExitOnFailure, as any other); 409 when it was handed another
//	    function already (the same one again waits for the same start);
//	    400 a bad specialization, 403 a client that is no function runner.
//
// Only function runners may hand it code: the port speaks TLS and takes
// only clients with a certificate of the cluster CA in the runners' group,
// since whoever could load code here could run it with this pod's service
// account, in its namespace. The specialization is kept in the code dir
// (an emptyDir, which outlives the container), so that a restarted
// container serves the same function again without being asked.

// specFile keeps the specialization in the code dir.
const specFile = ".minik8s-specialization.json"

// fileName is what a ConfigMap key may be, hence a file of a function.
var fileName = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// specEnv are the variables a specialization may set: those a function's
// own pod has (function.RuntimeEnv), none that would change the runtime
// itself (PYTHONPATH, LD_PRELOAD, ...).
var specEnv = []string{"FUNC_NAME", "FUNC_TIMEOUT_SECONDS", function.EnvPluginsPre, function.EnvPluginsPost, "FUNC_WORKERS"}

type specializeSetup struct {
	ln    net.Listener
	saved *function.Specialization
}

// specialization sets a generic server up: its TLS specialise listener
// and the specialization it was handed before a restart, if any.
func (s *server) specialization(callLn net.Listener) (specializeSetup, error) {
	if !s.cfg.Generic {
		return specializeSetup{}, nil
	}
	saved, err := readSaved(s.codeDir)
	if err != nil {
		return specializeSetup{}, err
	}
	ln := s.cfg.SpecializeListener
	if ln == nil {
		host, _, _ := net.SplitHostPort(callLn.Addr().String())
		addr := net.JoinHostPort(host, strconv.Itoa(s.cfg.SpecializePort))
		if ln, err = net.Listen("tcp", addr); err != nil {
			return specializeSetup{}, fmt.Errorf("listen on %s: %w", addr, err)
		}
	}
	cert, _, err := pki.SelfSigned("minik8s-funcserver", ln.Addr())
	if err != nil {
		ln.Close()
		return specializeSetup{}, fmt.Errorf("specialise port certificate: %w", err)
	}
	cfg, err := pki.ServerTLS(cert, s.cfg.CAPEM)
	if err != nil {
		ln.Close()
		return specializeSetup{}, fmt.Errorf("the cluster CA: %w", err)
	}
	log.WithField("address", ln.Addr().String()).Info("generic: waiting to be specialised")
	return specializeSetup{ln: tls.NewListener(ln, cfg), saved: saved}, nil
}

func readSaved(dir string) (*function.Specialization, error) {
	b, err := os.ReadFile(filepath.Join(dir, specFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the saved specialization: %w", err)
	}
	var sp function.Specialization
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, fmt.Errorf("the saved specialization %s: %w", specFile, err)
	}
	if err := validateSpec(&sp); err != nil {
		return nil, fmt.Errorf("the saved specialization %s: %w", specFile, err)
	}
	return &sp, nil
}

func validateSpec(sp *function.Specialization) error {
	switch {
	case sp.Func == "":
		return errors.New("func: required")
	case sp.CodeHash == "":
		return errors.New("codeHash: required")
	}
	if _, ok := sp.Files[function.FileFunction]; !ok {
		return fmt.Errorf("files: %s is required", function.FileFunction)
	}
	for name := range sp.Files {
		if !fileName.MatchString(name) || name == "." || name == ".." || name == specFile {
			return fmt.Errorf("files.%s: not a file name a function may have", name)
		}
	}
	seen := map[string]bool{}
	for i, e := range sp.Env {
		if !slices.Contains(specEnv, e.Name) {
			return fmt.Errorf("env[%d].name: %q may not be set: only %s", i, e.Name, strings.Join(specEnv, ", "))
		}
		if seen[e.Name] {
			return fmt.Errorf("env[%d].name: %q given twice", i, e.Name)
		}
		seen[e.Name] = true
	}
	return nil
}

func (s *server) specializeRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST "+function.SpecializePath, onlyRunners(http.HandlerFunc(s.handleSpecialize)))
	return mux
}

// onlyRunners answers 403 to clients that are not function runners (the
// TLS listener already took only certificates of the cluster CA).
func onlyRunners(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 ||
			!slices.Contains(r.TLS.PeerCertificates[0].Subject.Organization, rbac.FuncRunnersGroup) {
			who := "an anonymous client"
			if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
				who = strconv.Quote(r.TLS.PeerCertificates[0].Subject.CommonName)
			}
			writeJSON(w, http.StatusForbidden, specializeAnswer(who+" may not specialise this pod: only function runners may", "Forbidden"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func specializeAnswer(msg, reason string) api.Status {
	return api.Status{Status: "Failure", Message: msg, Reason: reason}
}

func (s *server) handleSpecialize(w http.ResponseWriter, r *http.Request) {
	var sp function.Specialization
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeJSON(w, http.StatusRequestEntityTooLarge, specializeAnswer(fmt.Sprintf("body: larger than %d bytes", s.cfg.MaxBodyBytes), "RequestEntityTooLarge"))
			return
		}
		writeJSON(w, http.StatusBadRequest, specializeAnswer("body: "+err.Error(), "BadRequest"))
		return
	}
	if err := validateSpec(&sp); err != nil {
		writeJSON(w, http.StatusBadRequest, specializeAnswer(err.Error(), "BadRequest"))
		return
	}
	s.mu.Lock()
	cur, done, draining := s.spec, s.startDone, s.draining
	if cur == nil && !draining {
		s.spec, s.startDone = &sp, make(chan struct{})
		s.starts.Add(1)
	}
	s.mu.Unlock()
	switch {
	case draining:
		writeJSON(w, http.StatusServiceUnavailable, specializeAnswer("shutting down", "ServiceUnavailable"))
		return
	case cur != nil && (cur.Func != sp.Func || cur.CodeHash != sp.CodeHash):
		writeJSON(w, http.StatusConflict, specializeAnswer(fmt.Sprintf("this pod serves function %s (code %s) already", cur.Func, cur.CodeHash), "Conflict"))
		return
	case cur != nil:
		// The same again (a retry): the answer is that of its start.
		select {
		case <-done:
		case <-r.Context().Done():
			return
		}
		s.answerStart(w)
		return
	}
	start := time.Now()
	err := s.save(&sp)
	if err == nil {
		err = s.apply(&sp)
	}
	if err != nil {
		// Nothing serves: the pod stays generic for another try.
		s.mu.Lock()
		s.spec, s.startDone = nil, nil
		s.mu.Unlock()
		s.starts.Done()
		writeJSON(w, http.StatusInternalServerError, specializeAnswer(err.Error(), "InternalError"))
		return
	}
	_ = s.runStart()
	s.starts.Done()
	log.WithFields(log.Fields{"function": sp.Func, "code": sp.CodeHash, "duration": time.Since(start)}).Info("specialised")
	s.answerStart(w)
}

// answerStart answers a specialise request with the outcome of the start.
func (s *server) answerStart(w http.ResponseWriter) {
	s.mu.Lock()
	err := s.startErr
	s.mu.Unlock()
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, Readiness{Status: statusFailed, Reason: err.Error()})
		return
	}
	r := s.readiness()
	code := http.StatusOK
	if !r.Ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, r)
}

// save writes the function's files, and then the specialization, into the
// code dir, emptied first: nothing of an earlier try stays.
func (s *server) save(sp *function.Specialization) error {
	entries, err := os.ReadDir(s.codeDir)
	if err != nil {
		return fmt.Errorf("code dir: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.codeDir, e.Name())); err != nil {
			return fmt.Errorf("code dir: %w", err)
		}
	}
	for name, data := range sp.Files {
		if err := os.WriteFile(filepath.Join(s.codeDir, name), []byte(data), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.codeDir, specFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("save the specialization: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.codeDir, specFile)); err != nil {
		return fmt.Errorf("save the specialization: %w", err)
	}
	return nil
}

// apply makes sp the function served, its start still to run.
func (s *server) apply(sp *function.Specialization) error {
	timeout, workers := s.cfg.Timeout, s.cfg.Workers
	var env []string
	for _, e := range sp.Env {
		switch e.Name {
		case "FUNC_TIMEOUT_SECONDS":
			secs, err := strconv.ParseFloat(e.Value, 64)
			if err != nil || secs <= 0 || secs > 1e9 {
				return fmt.Errorf("env FUNC_TIMEOUT_SECONDS: want a positive number of seconds, got %q", e.Value)
			}
			timeout = time.Duration(secs * float64(time.Second))
		case "FUNC_WORKERS":
			n, err := strconv.Atoi(e.Value)
			if err != nil || n < 1 || n > api.MaxContainerConcurrency {
				return fmt.Errorf("env FUNC_WORKERS: want 1..%d, got %q", api.MaxContainerConcurrency, e.Value)
			}
			workers = n
		}
		env = append(env, e.Name+"="+e.Value)
	}
	s.mu.Lock()
	s.spec = sp
	s.status = statusStarting
	s.mu.Unlock()
	s.fn.Store(s.serving(sp.Func, timeout, workers, env))
	return nil
}

// runStart starts the function served and hands the outcome to Run and
// to the specialise requests waiting for it.
func (s *server) runStart() error {
	err := s.start(s.startCtx, s.codeDir)
	s.mu.Lock()
	s.startErr = err
	done := s.startDone
	s.mu.Unlock()
	if done != nil {
		close(done)
	}
	select {
	case s.started <- err:
	default:
	}
	return err
}
