// Package audit is the apiserver's audit log: every write (and every
// refused one) as a JSON line in the shape of Kubernetes'
// audit.k8s.io/v1 Event at the Metadata level.
package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"
)

// An event says who, what, on which object, and the answer's code. Reads
// are not logged: a function call is a write (create funcs/invoke), a
// result read is not.

// maxBytes is where the log is rotated to audit.log.1, so that a
// cluster left running does not fill its disk.
const maxBytes = 100 << 20

// User is who made the request.
type User struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

// ObjectRef is the object a request was about.
type ObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Event is one line of the log.
type Event struct {
	Kind           string     `json:"kind"`
	APIVersion     string     `json:"apiVersion"`
	Level          string     `json:"level"`
	AuditID        string     `json:"auditID"`
	Stage          string     `json:"stage"`
	RequestURI     string     `json:"requestURI"`
	Verb           string     `json:"verb"`
	User           User       `json:"user"`
	SourceIPs      []string   `json:"sourceIPs,omitempty"`
	UserAgent      string     `json:"userAgent,omitempty"`
	ObjectRef      *ObjectRef `json:"objectRef,omitempty"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// Log appends events to a file through a buffer flushed every
// flushInterval (as Kubernetes' batching audit backend), so that a function
// call does not wait on a write; nil logs nothing.
type Log struct {
	path string
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	size int64
	done chan struct{}
}

// flushInterval bounds how long an event stays in memory.
const flushInterval = 200 * time.Millisecond

// Open opens (creating it) the log at path; "-" is no log (nil).
func Open(path string) (*Log, error) {
	if path == "-" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &Log{path: path, f: f, w: bufio.NewWriterSize(f, 64<<10), size: st.Size(), done: make(chan struct{})}
	go l.flushEvery(flushInterval)
	return l, nil
}

func (l *Log) flushEvery(d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
			l.mu.Lock()
			if err := l.w.Flush(); err != nil {
				log.WithError(err).Warn("audit log: write failed")
			}
			l.mu.Unlock()
		}
	}
}

// Close flushes the log and closes it.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	close(l.done)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.w.Flush(); err != nil {
		l.f.Close()
		return err
	}
	return l.f.Close()
}

// Write appends ev.
func (l *Log) Write(ev *Event) {
	line, err := json.Marshal(ev)
	if err != nil {
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size+int64(len(line)) > maxBytes {
		l.rotate()
	}
	n, _ := l.w.Write(line) // errors surface at the flush
	l.size += int64(n)
}

// rotate moves the log to PATH.1 and starts a new one.
func (l *Log) rotate() {
	_ = l.w.Flush()
	l.f.Close()
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		log.WithError(err).Warn("audit log: rotating failed")
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		log.WithError(err).Error("audit log: reopening failed")
		f, _ = os.Open(os.DevNull)
	}
	l.f, l.size = f, 0
	l.w.Reset(f)
}
