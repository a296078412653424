package funcserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// workerStopGrace is how long a worker whose stdin was closed may take to exit
// before it is killed.
const workerStopGrace = 3 * time.Second

// worker is one long-lived Python process, forked from the zygote that
// imported function.py, that serves one call at a time over its pipes
// (see worker.py).
type worker struct {
	pid      int
	hasCheck bool
	in       *os.File
	// replies carries the worker's protocol lines; closed at EOF.
	replies chan []byte
	// exited is closed once the process was reaped; waitErr is then set.
	exited   chan struct{}
	waitErr  error
	exitOnce sync.Once
	// signal kills the worker and its process group; its exit is then
	// reported (zygote.go).
	signal func() error
	seq    uint64
	// idleSince is when it last came free (the pool trims long-idle ones).
	idleSince time.Time
	killed    sync.Once
}

// workerSpec is how the zygote is started.
type workerSpec struct {
	python  string
	script  string
	codeDir string
	env     []string
	log     io.Writer
}

// ImportError is a function whose import failed or that defines no run.
type ImportError struct{ Err Error }

func (e *ImportError) Error() string {
	if e.Err.Trace != "" {
		return fmt.Sprintf("import function.py: %s: %s\n%s", e.Err.Type, e.Err.Message, e.Err.Trace)
	}
	return fmt.Sprintf("import function.py: %s: %s", e.Err.Type, e.Err.Message)
}

type hello struct {
	Type     string `json:"type"`
	HasCheck bool   `json:"hasCheck"`
	PID      int    `json:"pid"`
	Error    *Error `json:"error"`
}

type request struct {
	ID  uint64    `json:"id"`
	Arg api.Bytes `json:"arg"`
	// Event and Context are the call's event metadata and context, as JSON
	// objects, for a function taking run(event, context).
	Event   json.RawMessage `json:"event,omitempty"`
	Context json.RawMessage `json:"context,omitempty"`
	// SyncSends: the worker hands each send over as it is made ("send"
	// lines) and waits for its "sent" answer.
	SyncSends bool `json:"syncSends,omitempty"`
}

// sendMsg is a worker's send during a call, and sentMsg the answer.
type sendMsg struct {
	Type   string    `json:"type"`
	ID     uint64    `json:"id"`
	Output string    `json:"output"`
	Data   api.Bytes `json:"data"`
}

type sentMsg struct {
	Type  string `json:"type"`
	ID    uint64 `json:"id"`
	Error string `json:"error,omitempty"`
}

type reply struct {
	Type       string    `json:"type"`
	ID         uint64    `json:"id"`
	Result     api.Bytes `json:"result"`
	ResultType string    `json:"resultType"`
	Check      *bool     `json:"check"`
	Output     string    `json:"output"`
	// OutputDropped counts the bytes of output cut (noted in Output).
	OutputDropped int64  `json:"outputDropped"`
	Error         *Error `json:"error"`

	PluginErrors []string        `json:"pluginErrors"`
	Sends        []function.Send `json:"sends"`
	Spans        json.RawMessage `json:"spans"`
	// Metrics is the metrics plugin's measure of the run.
	Metrics *runMetrics `json:"metrics"`
}

type runMetrics struct {
	Seconds float64 `json:"seconds"`
	Outcome string  `json:"outcome"`
}

// awaitHello waits until the worker, just forked, says it serves; ctx
// bounds only the wait.
func (w *worker) awaitHello(ctx context.Context) (*worker, error) {
	select {
	case line, ok := <-w.replies:
		if !ok {
			w.kill()
			return nil, fmt.Errorf("worker exited before it served: %v", w.waitErr)
		}
		// A worker that imports the function itself (worker.py's --serve)
		// may fail to.
		h, err := readHello(line, "the worker", "ready")
		if err != nil {
			w.kill()
			return nil, err
		}
		w.hasCheck = h.HasCheck
		return w, nil
	case <-ctx.Done():
		w.kill()
		return nil, ctx.Err()
	}
}

// readHello reads the first line of a zygote or a worker: a hello of
// type want, or an *ImportError when it could not import the function.
func readHello(line []byte, who, want string) (hello, error) {
	var h hello
	if err := json.Unmarshal(line, &h); err != nil {
		return h, fmt.Errorf("%s sent a bad hello %.200q: %w", who, line, err)
	}
	switch h.Type {
	case want:
		return h, nil
	case "importError":
		if h.Error == nil {
			h.Error = &Error{Message: "unknown import error", Type: "ImportError"}
		}
		return h, &ImportError{Err: *h.Error}
	}
	return h, fmt.Errorf("%s sent a hello of type %q, want %q", who, h.Type, want)
}

// exit records the worker's end; only the first call counts.
func (w *worker) exit(err error) {
	w.exitOnce.Do(func() {
		w.waitErr = err
		close(w.exited)
	})
}

func (w *worker) read(r *os.File) {
	defer close(w.replies)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		w.replies <- line
	}
}

// alive says whether the process still runs.
func (w *worker) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// kill ends the worker and everything it spawned and waits until it is reaped.
func (w *worker) kill() {
	w.killed.Do(func() {
		if err := w.signal(); err != nil && w.alive() {
			log.WithError(err).WithField("pid", w.pid).Warn("kill worker")
		}
		w.in.Close()
	})
	<-w.exited
	// Let read end and drop a reply that raced with the kill.
	for range w.replies {
	}
}

// stop asks the worker to exit by closing its stdin, then kills it if it
// lingers.
func (w *worker) stop() {
	w.in.Close()
	select {
	case <-w.exited:
	case <-time.After(workerStopGrace):
	}
	w.kill()
}

// callError is a call that got no answer from the worker; the worker is then
// dead and must be replaced.
type callError struct{ Err Error }

func (e *callError) Error() string { return e.Err.Type + ": " + e.Err.Message }

// errNotDelivered: the worker was dead before the call reached it, so
// another worker may take the call.
var errNotDelivered = errors.New("the worker was gone before the call reached it")

// errCallTimeout: the call's deadline passed; its worker was killed.
var errCallTimeout = errors.New("call timed out")

// call sends one call and waits until deadline for its answer. On
// errCallTimeout or a callError the worker is dead afterwards.
func (w *worker) call(in callInput, deadline time.Time) (*reply, error) {
	w.seq++
	id := w.seq
	msg, err := json.Marshal(request{ID: id, Arg: api.Bytes(in.arg), Event: in.event, Context: in.context, SyncSends: in.send != nil})
	if err != nil {
		return nil, fmt.Errorf("encode call: %w", err)
	}
	msg = append(msg, '\n')
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()

	// A big argument fills the pipe; the write is bounded like the call.
	_ = w.in.SetWriteDeadline(deadline)
	if _, err := w.in.Write(msg); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.kill()
			return nil, errCallTimeout
		}
		// Nobody reads the pipe: the worker died before the call reached
		// it (while idle, between its death and its reaping being seen).
		w.kill()
		return nil, errNotDelivered
	}
	for {
		select {
		case line, ok := <-w.replies:
			if !ok {
				w.kill()
				return nil, w.exitedError()
			}
			var r reply
			if err := json.Unmarshal(line, &r); err == nil && r.Type == "send" && r.ID == id && in.send != nil {
				if err := w.relaySend(in, line, id, deadline); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil || r.Type != "result" || r.ID != id {
				w.kill()
				return nil, &callError{Err: Error{Type: ErrorWorkerExited,
					Message: fmt.Sprintf("worker broke the protocol (answer %.200q to call %d); it was killed", line, id)}}
			}
			return &r, nil
		case <-timer.C:
			w.kill()
			return nil, errCallTimeout
		}
	}
}

// relaySend hands a send of call id to in.send and answers the worker,
// which waits on it.
func (w *worker) relaySend(in callInput, line []byte, id uint64, deadline time.Time) error {
	var m sendMsg
	if err := json.Unmarshal(line, &m); err != nil {
		w.kill()
		return &callError{Err: Error{Type: ErrorWorkerExited, Message: fmt.Sprintf("worker sent a send that does not decode (%v); it was killed", err)}}
	}
	why := in.send(function.Send{Output: m.Output, Data: m.Data}, deadline)
	ack, err := json.Marshal(sentMsg{Type: "sent", ID: id, Error: why})
	if err != nil {
		return err
	}
	_ = w.in.SetWriteDeadline(deadline)
	if _, err := w.in.Write(append(ack, '\n')); err != nil {
		w.kill()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errCallTimeout
		}
		return w.exitedError()
	}
	return nil
}

func (w *worker) exitedError() error {
	return &callError{Err: Error{Type: ErrorWorkerExited,
		Message: fmt.Sprintf("the worker process exited during the call (%v); it is replaced by a fresh one", w.waitErr)}}
}
