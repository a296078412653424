package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	log "github.com/sirupsen/logrus"

	"minik8s/pkg/containerd"
	"minik8s/pkg/errdefs"
)

// kubectl exec speaks Kubernetes' channel protocol over a websocket: each
// binary message starts with the number of its stream.
const (
	execProtocolV5 = "v5.channel.k8s.io" // v4, and 255 closes a stream (stdin's end)
	execProtocolV4 = "v4.channel.k8s.io" // the end is a Status on the error stream

	streamStdin  = 0
	streamStdout = 1
	streamStderr = 2
	streamError  = 3
	streamResize = 4
	streamClose  = 255
)

var execUpgrader = websocket.Upgrader{
	Subprotocols: []string{execProtocolV5, execProtocolV4},
	// Only the apiserver reaches the kubelet (see pki.OnlyAPIServer); it
	// is no browser.
	CheckOrigin: func(*http.Request) bool { return true },
}

// serveExec runs a command in a pod's container for kubectl exec, which
// the apiserver proxies here: ?command= (repeated), stdin, stdout, stderr,
// tty, container.
func (k *Kubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	wk, container, err := k.podContainer(r)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	cmd := q["command"]
	if len(cmd) == 0 {
		writeError(w, errdefs.BadRequest("command", "give the command to run"))
		return
	}
	id, ok := wk.RunningContainer(container)
	if !ok {
		writeError(w, errdefs.BadRequest("container", "container %q of pod %s is not running", container, wk.Pod().Name))
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		writeError(w, errdefs.BadRequest("", "exec needs a websocket upgrade (%s or %s): kubectl 1.30 or later speaks it", execProtocolV5, execProtocolV4))
		return
	}
	conn, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer conn.Close()
	s := &execSession{conn: conn, v5: conn.Subprotocol() == execProtocolV5}
	flag := func(name string) bool { v := q.Get(name); return v == "true" || v == "1" }
	streams := containerd.ExecStreams{TTY: flag("tty")}
	if flag("stdout") {
		streams.Stdout = s.writer(streamStdout)
	}
	if flag("stderr") && !streams.TTY {
		streams.Stderr = s.writer(streamStderr)
	}
	resize := make(chan containerd.TermSize, 1)
	streams.Resize = resize
	var stdin *execStdin
	if flag("stdin") {
		stdin = newExecStdin()
		streams.Stdin = stdin
	}
	// The client going away ends the command; the command's end ends the
	// session, whatever the kubelet's request context says.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	go s.readLoop(cancel, stdin, resize)
	code, err := k.rt.ExecStream(ctx, id, cmd, streams)
	s.finish(code, err)
	log.WithFields(log.Fields{"pod": wk.Pod().Namespace + "/" + wk.Pod().Name, "container": container, "exitCode": code}).Debug("exec ended")
}

// execSession is one websocket of kubectl exec.
type execSession struct {
	conn *websocket.Conn
	v5   bool
	mu   sync.Mutex // one writer at a time
}

func (s *execSession) send(stream byte, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn.WriteMessage(websocket.BinaryMessage, append([]byte{stream}, data...))
}

type streamWriter struct {
	s      *execSession
	stream byte
}

func (w streamWriter) Write(p []byte) (int, error) {
	if err := w.s.send(w.stream, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *execSession) writer(stream byte) io.Writer { return streamWriter{s: s, stream: stream} }

// readLoop takes stdin, resizes and (v5) the end of stdin from the client
// until it goes, then calls gone.
func (s *execSession) readLoop(gone func(), stdin *execStdin, resize chan containerd.TermSize) {
	defer gone()
	for {
		_, data, err := s.conn.ReadMessage()
		if err != nil {
			if stdin != nil {
				stdin.end()
			}
			return
		}
		if len(data) == 0 {
			continue
		}
		switch data[0] {
		case streamStdin:
			if stdin != nil {
				stdin.write(data[1:])
			}
		case streamResize:
			var size struct{ Width, Height uint16 }
			if json.Unmarshal(data[1:], &size) == nil {
				select {
				case resize <- containerd.TermSize{Width: size.Width, Height: size.Height}:
				default: // a newer size follows
				}
			}
		case streamClose:
			if s.v5 && len(data) > 1 && data[1] == streamStdin && stdin != nil {
				stdin.end()
			}
		}
	}
}

// execStatus is the Status kubectl reads from the error stream: Success,
// or Failure with the exit code (NonZeroExitCode) or the reason.
type execStatus struct {
	Metadata struct{}          `json:"metadata"`
	Status   string            `json:"status"`
	Message  string            `json:"message,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Details  *execStatusDetail `json:"details,omitempty"`
	Code     int               `json:"code,omitempty"`
}

type execStatusDetail struct {
	Causes []execStatusCause `json:"causes"`
}

type execStatusCause struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// finish sends the command's end and closes the websocket.
func (s *execSession) finish(code int, err error) {
	st := execStatus{Status: "Success"}
	switch {
	case err != nil:
		st = execStatus{Status: "Failure", Message: err.Error(), Reason: "InternalError", Code: http.StatusInternalServerError}
	case code != 0:
		st = execStatus{Status: "Failure", Message: fmt.Sprintf("command terminated with non-zero exit code: %d", code), Reason: "NonZeroExitCode",
			Details: &execStatusDetail{Causes: []execStatusCause{{Reason: "ExitCode", Message: strconv.Itoa(code)}}}}
	}
	data, _ := json.Marshal(st)
	_ = s.send(streamError, data)
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
}

// execStdin is the command's input: what the client sends, until it says
// its input ended (or goes).
type execStdin struct {
	r       *io.PipeReader
	w       *io.PipeWriter
	done    chan struct{}
	endOnce sync.Once
}

func newExecStdin() *execStdin {
	r, w := io.Pipe()
	return &execStdin{r: r, w: w, done: make(chan struct{})}
}

var _ containerd.EOFNotifier = (*execStdin)(nil)

func (in *execStdin) Read(p []byte) (int, error) {
	n, err := in.r.Read(p)
	if err == io.EOF {
		in.endOnce.Do(func() { close(in.done) })
	}
	return n, err
}

// Done is closed once the command has read all of its input.
func (in *execStdin) Done() <-chan struct{} { return in.done }

// write passes data on; the command reading it is what makes it return.
func (in *execStdin) write(data []byte) { _, _ = in.w.Write(data) }

func (in *execStdin) end() { _ = in.w.Close() }
