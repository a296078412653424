// Package logs keeps container output in files under the kubelet's root
// dir, capped by rotation, and streams them.
package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
)

// DefaultMaxBytes is the size at which a log file is rotated.
const DefaultMaxBytes = 4 << 20

// Path is where a container's output goes: one file per container name,
// kept across restarts of the container, in the pod's dir.
func Path(podDir, container string) string {
	return filepath.Join(podDir, "logs", container+".log")
}

// Rotate caps a log file: past max bytes its contents move to path.1 and
// it starts again empty. containerd's shim keeps the file open in append
// mode, so the truncation is seen by the writer at once.
func Rotate(path string, max int64) error {
	st, err := os.Stat(path)
	if err != nil || st.Size() <= max {
		return nil
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := path + ".1.tmp"
	dst, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		os.Remove(tmp)
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path+".1"); err != nil {
		return err
	}
	return os.Truncate(path, 0)
}

// StreamOptions: Follow keeps the stream open for what the container adds;
// TailLines, when not negative, starts with the last TailLines lines only
// (kubectl logs --tail); Since leaves out the lines written before it and
// Timestamps begins each line with its time (--since, --timestamps: the
// records of the container logger have both).
type StreamOptions struct {
	Follow     bool
	TailLines  int
	Since      time.Time
	Timestamps bool
}

// Stream writes the container's log (the rotated part first) to w. With
// Follow it keeps writing what the container adds until ctx ends or
// done() says the container will write no more.
func Stream(ctx context.Context, path string, opts StreamOptions, w io.Writer, flush func(), done func() bool) error {
	follow := opts.Follow
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("log of %s: %w", filepath.Base(path), errdefs.ErrNotFound)
		}
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var off int64
	if opts.TailLines >= 0 {
		if off, err = writeTail(path, f, opts, w); err != nil {
			return err
		}
	}
	rw := &renderer{w: w, opts: opts}
	w = rw
	if opts.TailLines < 0 {
		if old, err := os.Open(path + ".1"); err == nil {
			_, err = io.Copy(w, old)
			old.Close()
			if err != nil {
				return err
			}
		}
	}
	last := false // one more read after the writer is done
	buf := make([]byte, 32<<10)
	for {
		n, err := f.ReadAt(buf, off)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			off += int64(n)
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if !follow || last {
			return rw.flush()
		}
		if flush != nil {
			flush()
		}
		// Rotated away beneath us: start again at its beginning.
		if st, err := f.Stat(); err == nil && st.Size() < off {
			off = 0
			continue
		}
		if done != nil && done() {
			last = true
			continue
		}
		if !wait.Sleep(ctx, 200*time.Millisecond) {
			return nil
		}
	}
}

// writeTail writes the last opts.TailLines lines of the log that opts
// shows (its rotated part and f, as far as f goes now in whole lines) and
// returns where in f it stopped. The parts are at most the rotation size
// each, so reading them whole is bounded.
func writeTail(path string, f *os.File, opts StreamOptions, w io.Writer) (int64, error) {
	cur, err := io.ReadAll(f)
	if err != nil {
		return 0, err
	}
	end := len(cur)
	if opts.Follow {
		end = bytes.LastIndexByte(cur, '\n') + 1 // a line being written comes with the rest
	}
	data := cur[:end]
	if old, err := os.ReadFile(path + ".1"); err == nil {
		data = append(old, data...)
	}
	lines := bytes.Split(data, []byte("\n"))
	// What follows the last newline: nothing, or a line without its newline.
	rest := lines[len(lines)-1]
	// A line of output may span records (pieces, then its end): the tail
	// counts lines.
	var shown [][]byte
	var line []byte
	for _, l := range lines[:len(lines)-1] {
		if out, ok := render(l, opts); ok {
			if line = append(line, out...); bytes.HasSuffix(out, []byte("\n")) {
				shown, line = append(shown, line), nil
			}
		}
	}
	if len(rest) > 0 {
		if out, ok := render(rest, opts); ok {
			line = append(line, bytes.TrimSuffix(out, []byte("\n"))...)
		}
	}
	if len(line) > 0 {
		shown = append(shown, line)
	}
	if n := opts.TailLines; n < len(shown) {
		shown = shown[len(shown)-n:]
	}
	_, err = w.Write(bytes.Join(shown, nil))
	return int64(end), err
}
