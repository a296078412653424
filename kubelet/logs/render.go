package logs

import (
	"bytes"
	"io"
	"time"

	"minik8s/kubelet/logs/cri"
)

// render is what a line of the log file shows under opts, and whether it
// shows at all (a record before opts.Since does not).
func render(line []byte, opts StreamOptions) ([]byte, bool) {
	rec := cri.Parse(line)
	if !rec.OK {
		return append(append([]byte{}, line...), '\n'), true
	}
	if !opts.Since.IsZero() && rec.Time.Before(opts.Since) {
		return nil, false
	}
	var out []byte
	if opts.Timestamps {
		out = append(rec.Time.AppendFormat(out, time.RFC3339Nano), ' ')
	}
	out = append(out, rec.Content...)
	if !rec.Partial {
		out = append(out, '\n')
	}
	return out, true
}

// renderer writes the lines of a log file under opts as whole lines come.
type renderer struct {
	w    io.Writer
	opts StreamOptions
	buf  []byte
}

func (r *renderer) Write(p []byte) (int, error) {
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if out, ok := render(r.buf[:i], r.opts); ok {
			if _, err := r.w.Write(out); err != nil {
				return 0, err
			}
		}
		r.buf = r.buf[i+1:]
	}
}

// flush writes what is left without its newline: the end of output kept
// as written.
func (r *renderer) flush() error {
	if len(r.buf) == 0 {
		return nil
	}
	out, ok := render(r.buf, r.opts)
	r.buf = nil
	if !ok {
		return nil
	}
	_, err := r.w.Write(bytes.TrimSuffix(out, []byte("\n")))
	return err
}
