package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/google/uuid"
)

// execOutputMax bounds what Exec returns of a command's output.
const execOutputMax = 4 << 10

// Exec runs cmd in the running container id, as its main process runs
// (user, environment, working directory), and waits for it to exit: its
// exit code and the start of its output. When ctx ends first the command
// is killed and ctx's error returned.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string) (_ int, _ string, err error) {
	defer func() {
		// Whichever call the deadline cut short, the caller learns it ran out.
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%q in %s: %w (%v)", strings.Join(cmd, " "), id, ctx.Err(), err)
		}
	}()
	// The shim writes the output to a file, as it does containers' logs:
	// no FIFOs to keep open.
	dir, err := os.MkdirTemp("", "minik8s-exec-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "output")
	ctx = nsCtx(ctx)
	p, exited, err := r.startExec(ctx, id, cmd, false, cio.LogFile(out))
	if err != nil {
		return 0, "", err
	}
	select {
	case st := <-exited:
		// The shim copies the output into the file until the process is
		// deleted: its exit can come before the last of it is written.
		deleteProcess(ctx, p)
		code, _, err := st.Result()
		if err != nil {
			return 0, "", err
		}
		return int(code), readStart(out, execOutputMax), nil
	case <-ctx.Done():
		defer deleteProcess(ctx, p)
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = p.Kill(kctx, syscall.SIGKILL)
		return 0, "", fmt.Errorf("%q in %s: %w", strings.Join(cmd, " "), id, ctx.Err())
	}
}

// readStart reads up to max bytes of a file.
func readStart(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, max))
	return string(data)
}

// startExec starts cmd in the running container id as its main process
// runs (user, environment, working directory), its output to output, and
// returns it with its exit. The caller deletes it (deleteProcess).
func (r *Runtime) startExec(ctx context.Context, id string, cmd []string, tty bool, output cio.Creator) (containerd.Process, <-chan containerd.ExitStatus, error) {
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return nil, nil, wrap(err, "container %s", id)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return nil, nil, wrap(err, "task of %s", id)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return nil, nil, wrap(err, "spec of %s", id)
	}
	proc := *spec.Process
	proc.Args, proc.Terminal = cmd, tty
	p, err := task.Exec(ctx, "exec-"+uuid.NewString()[:13], &proc, output)
	if err != nil {
		return nil, nil, wrap(err, "exec in %s", id)
	}
	exited, err := p.Wait(ctx)
	if err == nil {
		err = p.Start(ctx)
	}
	if err != nil {
		deleteProcess(ctx, p)
		return nil, nil, wrap(err, "starting %q in %s", strings.Join(cmd, " "), id)
	}
	return p, exited, nil
}

// deleteProcess removes an exec'd process, killing it if it runs; the
// deletion is not cut short (see uninterrupted).
func deleteProcess(ctx context.Context, p containerd.Process) {
	dctx, cancel := uninterrupted(ctx)
	defer cancel()
	_, _ = p.Delete(dctx, containerd.WithProcessKill)
}
