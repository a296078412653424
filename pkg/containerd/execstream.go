package containerd

import (
	"context"
	"io"
	"os"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
)

// TermSize is a terminal's size in characters.
type TermSize struct {
	Width, Height uint16
}

// ExecStreams are the standard streams of a command run by ExecStream (nil
// for one not attached) and, for a terminal, its sizes as they change.
type ExecStreams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
	Resize         <-chan TermSize
}

// ExecStream runs cmd in the running container id as its main process
// runs (user, environment, working directory), attached to s (kubectl
// exec), and returns its exit code once it exited and its output is
// written. When ctx ends first the command is killed.
func (r *Runtime) ExecStream(ctx context.Context, id string, cmd []string, s ExecStreams) (int, error) {
	// The FIFOs between the shim and this process live in a dir of ours.
	dir, err := os.MkdirTemp("", "minik8s-exec-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	opts := []cio.Opt{cio.WithStreams(s.Stdin, orDiscard(s.Stdout), orDiscard(s.Stderr)), cio.WithFIFODir(dir)}
	if s.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	ctx = nsCtx(ctx)
	p, exited, err := r.startExec(ctx, id, cmd, s.TTY, cio.NewCreator(opts...))
	if err != nil {
		return 0, err
	}
	defer deleteProcess(ctx, p)
	if s.Stdin != nil && !s.TTY {
		// The command sees the end of its input when the caller's ends.
		go func() {
			<-stdinDone(s.Stdin)
			_ = p.CloseIO(ctx, containerd.WithStdinCloser)
		}()
	}
	for {
		select {
		case size := <-s.Resize:
			if size.Width > 0 && size.Height > 0 {
				_ = p.Resize(ctx, uint32(size.Width), uint32(size.Height))
			}
		case st := <-exited:
			code, _, err := st.Result()
			if err != nil {
				return 0, err
			}
			// The output still in the FIFOs is copied before the answer.
			p.IO().Wait()
			return int(code), nil
		case <-ctx.Done():
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = p.Kill(kctx, syscall.SIGKILL)
			return 0, ctx.Err()
		}
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// EOFNotifier is a stdin that says when it has reached its end.
type EOFNotifier interface {
	Done() <-chan struct{}
}

// stdinDone is closed when in has no more to give, if it can tell.
func stdinDone(in io.Reader) <-chan struct{} {
	if n, ok := in.(EOFNotifier); ok {
		return n.Done()
	}
	return nil
}
