package funcserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/subprocess"
)

// zygoteWaitDelay bounds waiting for a zygote's output once it exited:
// a daemon its import started may hold the pod log's pipe for good.
const zygoteWaitDelay = time.Second

// zygote starts the Python process that imports function.py once and
// forks the workers from it (worker.py's Zygote): a worker costs a fork
// of an interpreter that has everything imported, sharing its pages
// copy-on-write, not an interpreter of its own and a fresh import. A
// zygote that exited (its workers die with it) is started again by the
// next fork.
type zygote struct {
	spec workerSpec

	// mu serializes starts and forks: a fork's answer is matched to the
	// one fork in flight.
	mu  sync.Mutex
	cur *zygoteProc
}

// zygoteProc is one started zygote.
type zygoteProc struct {
	cmd  *exec.Cmd
	wait func() error // cmd's Wait, on the thread that started it
	conn *net.UnixConn
	// generic: started warm, the function not loaded yet.
	generic bool
	wmu     sync.Mutex // one message at a time on conn

	hello  chan []byte
	forked chan int
	// exited is closed once the process was reaped and every worker it
	// forked was told.
	exited  chan struct{}
	waitErr error

	mu      sync.Mutex
	pending *worker // the fork in flight
	workers map[int]*worker
}

// zygoteMsg is a line the zygote sends on its control socket.
type zygoteMsg struct {
	Type   string `json:"type"`
	PID    int    `json:"pid"`
	Status int    `json:"status"`
}

// fork starts a worker, starting the zygote first when none runs, and
// waits until the worker serves; ctx bounds the start only. An import
// that fails is an *ImportError.
func (z *zygote) fork(ctx context.Context) (*worker, error) {
	z.mu.Lock()
	var w *worker
	var outR *os.File
	for attempt := 0; ; attempt++ {
		zp, err := z.live(ctx)
		if err != nil {
			z.mu.Unlock()
			return nil, err
		}
		if w, outR, err = zp.fork(); err == nil {
			break
		}
		// It died before its exit was seen (a worker may have killed
		// it): once reaped, the next one is started.
		zp.kill()
		if attempt > 0 {
			z.mu.Unlock()
			return nil, err
		}
	}
	z.mu.Unlock()
	go w.read(outR)
	return w.awaitHello(ctx)
}

// live returns the running zygote, or starts one; z.mu is held. A warm
// one (adopt) loads the function first.
func (z *zygote) live(ctx context.Context) (*zygoteProc, error) {
	if z.cur != nil {
		select {
		case <-z.cur.exited:
			log.WithField("status", z.cur.waitErr).Warn("the zygote exited; starting another")
		default:
			if !z.cur.generic {
				return z.cur, nil
			}
			err := z.cur.load(ctx, z.spec.env)
			var ie *ImportError
			if err == nil || errors.As(err, &ie) || ctx.Err() != nil {
				if err != nil {
					z.cur = nil
				}
				return z.cur, err
			}
			log.WithError(err).Warn("the warm zygote failed; starting another")
		}
	}
	zp, err := startZygote(ctx, z.spec, false)
	if err != nil {
		return nil, err
	}
	z.cur = zp
	return zp, nil
}

// adopt makes a warm zygote (prestart) the one to fork from; it loads the
// function on the first fork.
func (z *zygote) adopt(zp *zygoteProc) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.cur = zp
}

// prestart starts a warm zygote: the interpreter and the runtime
// imported, no function yet (worker.py's --generic), so that a generic
// server's specialisation costs the function's import and a fork.
func prestart(ctx context.Context, spec workerSpec) (*zygoteProc, error) {
	return startZygote(ctx, spec, true)
}

// close ends the zygote: told its input ended, it exits, and any worker
// left dies with it.
func (z *zygote) close() {
	z.mu.Lock()
	zp := z.cur
	z.cur = nil
	z.mu.Unlock()
	if zp == nil {
		return
	}
	_ = zp.conn.CloseWrite()
	select {
	case <-zp.exited:
	case <-time.After(workerStopGrace):
		_ = killGroup(zp.cmd.Process.Pid)
		<-zp.exited
	}
}

// startZygote starts a zygote and waits until it imported the function,
// or, generic, until it is ready to.
func startZygote(ctx context.Context, spec workerSpec, generic bool) (*zygoteProc, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("zygote control socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "zygote"), os.NewFile(uintptr(fds[1]), "zygote-child")
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("zygote control socket: %w", err)
	}
	conn := fc.(*net.UnixConn)
	args := []string{"-u", spec.script, spec.codeDir}
	if generic {
		args = append(args, "--generic")
	}
	cmd := exec.Command(spec.python, args...)
	cmd.Dir = spec.codeDir
	if len(spec.env) > 0 {
		cmd.Env = append(os.Environ(), spec.env...)
	}
	cmd.ExtraFiles = []*os.File{theirs} // fd 3
	// The function's own logging and tracebacks outside calls are pod logs.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if spec.log != nil {
		cmd.Stdout, cmd.Stderr = spec.log, spec.log
	}
	cmd.WaitDelay = zygoteWaitDelay
	cmd.SysProcAttr = childAttr()
	wait, err := subprocess.Start(cmd)
	// Only the zygote holds its end: its exit is the end of conn.
	theirs.Close()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("start %s: %w", spec.python, err)
	}
	zp := &zygoteProc{cmd: cmd, conn: conn, hello: make(chan []byte, 1), forked: make(chan int, 1),
		exited: make(chan struct{}), workers: map[int]*worker{}, generic: generic, wait: wait}
	go zp.read()
	if err := zp.awaitHello(ctx); err != nil {
		return nil, err
	}
	return zp, nil
}

// load has a warm zygote import the function, with env ("KEY=VALUE")
// added to its environment.
func (zp *zygoteProc) load(ctx context.Context, env []string) error {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	if err := zp.send(map[string]any{"op": "load", "env": m}); err != nil {
		return fmt.Errorf("load the function in the warm zygote: %w", err)
	}
	zp.generic = false
	return zp.awaitHello(ctx)
}

// awaitHello waits for the zygote's hello: "generic" when it was started
// so, else "ready" once the function was imported; an import that failed
// is an *ImportError, and the zygote is then gone.
func (zp *zygoteProc) awaitHello(ctx context.Context) error {
	want := "ready"
	if zp.generic {
		want = "generic"
	}
	select {
	case line := <-zp.hello:
		if _, err := readHello(line, "the zygote", want); err != nil {
			zp.kill()
			return err
		}
		return nil
	case <-zp.exited:
		return fmt.Errorf("worker exited while importing function.py: %v", zp.waitErr)
	case <-ctx.Done():
		zp.kill()
		return ctx.Err()
	}
}

// kill ends the zygote and its process group and waits until it was
// reaped; its workers die with it.
func (zp *zygoteProc) kill() {
	_ = killGroup(zp.cmd.Process.Pid)
	<-zp.exited
}

// read dispatches the zygote's messages until it exits, then reaps it and
// tells every worker it forked.
func (zp *zygoteProc) read() {
	br := bufio.NewReader(zp.conn)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			break
		}
		var m zygoteMsg
		if err := json.Unmarshal(line, &m); err != nil {
			log.WithError(err).Errorf("the zygote sent a bad message %.200q; ending it", line)
			_ = killGroup(zp.cmd.Process.Pid)
			continue
		}
		if m.Type == "generic" || m.Type == "ready" || m.Type == "importError" {
			zp.hello <- line
			continue
		}
		zp.handle(m)
	}
	zp.conn.Close()
	err := zp.wait()
	if err == nil {
		err = errors.New("exit status 0")
	}
	zp.waitErr = err
	zp.mu.Lock()
	gone := fmt.Errorf("its zygote exited (%v)", err)
	for pid, w := range zp.workers {
		w.exit(gone)
		delete(zp.workers, pid)
	}
	zp.mu.Unlock()
	close(zp.exited)
}

func (zp *zygoteProc) handle(m zygoteMsg) {
	zp.mu.Lock()
	defer zp.mu.Unlock()
	switch m.Type {
	case "forked":
		if w := zp.pending; w != nil {
			zp.pending = nil
			w.pid = m.PID
			zp.workers[m.PID] = w
			zp.forked <- m.PID
		}
	case "exit":
		if w, ok := zp.workers[m.PID]; ok {
			delete(zp.workers, m.PID)
			w.exit(waitStatusError(syscall.WaitStatus(m.Status)))
		}
	}
}

// waitStatusError says how a worker ended, as os/exec says it of a process.
func waitStatusError(ws syscall.WaitStatus) error {
	switch {
	case ws.Exited():
		return fmt.Errorf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		return fmt.Errorf("signal: %v", ws.Signal())
	}
	return fmt.Errorf("wait status %#x", int(ws))
}

// fork asks the zygote for a worker on two fresh pipes and returns it with
// the end its answers come on, once the zygote said it forked.
func (zp *zygoteProc) fork() (*worker, *os.File, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("worker input pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, fmt.Errorf("worker output pipe: %w", err)
	}
	w := &worker{in: inW, replies: make(chan []byte, 1), exited: make(chan struct{})}
	zp.mu.Lock()
	zp.pending = w
	zp.mu.Unlock()
	err = zp.send(map[string]any{"op": "fork"}, inR, outW)
	// The worker has its own copies now (or never will).
	inR.Close()
	outW.Close()
	if err == nil {
		select {
		case pid := <-zp.forked:
			w.signal = func() error { return zp.send(map[string]any{"op": "kill", "pid": pid}) }
			return w, outR, nil
		case <-zp.exited:
			err = fmt.Errorf("the zygote exited before it forked a worker: %v", zp.waitErr)
		}
	}
	zp.mu.Lock()
	zp.pending = nil
	zp.mu.Unlock()
	inW.Close()
	outR.Close()
	return nil, nil, fmt.Errorf("fork a worker: %w", err)
}

// send writes one control message, with files passed along.
func (zp *zygoteProc) send(msg map[string]any, files ...*os.File) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = syscall.UnixRights(fds...)
	}
	zp.wmu.Lock()
	defer zp.wmu.Unlock()
	select {
	case <-zp.exited:
		return errors.New("the zygote exited")
	default:
	}
	_, _, err = zp.conn.WriteMsgUnix(b, oob, nil)
	return err
}
