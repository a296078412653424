// Package cri keeps container output as Kubernetes' container runtimes keep
// it (the CRI log format). It is the container logger's only code beside
// the standard library, to keep that process (one per container) small.
package cri

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// Each line of output is a record "TIME STREAM TAG CONTENT\n": TIME in
// RFC 3339 with nanoseconds, STREAM stdout or stderr, TAG F for a whole
// line or P for a piece of a longer one. Output kept as written (by a
// kubelet without the logger) parses as no record and is served as it is.

// MaxRecord is the longest content of one record; a longer line is cut
// into pieces (P), as containerd's CRI plugin cuts them.
const MaxRecord = 16 << 10

// OpenLog opens the log at path to append records to it.
func OpenLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
}

// Log writes what stdout and stderr carry to f as records, until both end.
// It is the loop of the container logger (cmd/minik8s-logger) that
// containerd's shim runs beside each container.
func Log(f io.Writer, stdout, stderr io.Reader) error {
	var mu sync.Mutex // one record per write, whole
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []struct {
		name string
		r    io.Reader
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if s.r == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = copyRecords(f, &mu, s.name, s.r)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func copyRecords(w io.Writer, mu *sync.Mutex, stream string, r io.Reader) error {
	br := bufio.NewReaderSize(r, MaxRecord)
	var rec []byte
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			tag, content := "P", line
			if line[len(line)-1] == '\n' {
				tag, content = "F", line[:len(line)-1]
			}
			rec = append(rec[:0], time.Now().UTC().Format(time.RFC3339Nano)...)
			rec = append(rec, ' ')
			rec = append(rec, stream...)
			rec = append(rec, ' ')
			rec = append(rec, tag...)
			rec = append(rec, ' ')
			rec = append(rec, content...)
			rec = append(rec, '\n')
			mu.Lock()
			_, werr := w.Write(rec)
			mu.Unlock()
			if werr != nil {
				return werr
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed):
			return nil
		default:
			return err
		}
	}
}

// Record is one parsed record; OK is false for output kept as written.
type Record struct {
	Time    time.Time
	Partial bool
	Content []byte
	OK      bool
}

// Parse reads one line of a log file (without its newline).
func Parse(line []byte) Record {
	ts, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return Record{Content: line}
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return Record{Content: line}
	}
	stream, rest, ok := bytes.Cut(rest, []byte(" "))
	if !ok || (string(stream) != "stdout" && string(stream) != "stderr") {
		return Record{Content: line}
	}
	tag, content, ok := bytes.Cut(rest, []byte(" "))
	if !ok && len(rest) == 1 {
		tag, content, ok = rest, nil, true // an empty line
	}
	if !ok || (string(tag) != "F" && string(tag) != "P") {
		return Record{Content: line}
	}
	return Record{Time: t, Partial: string(tag) == "P", Content: content, OK: true}
}
