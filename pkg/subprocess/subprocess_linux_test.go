package subprocess

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// A child outlives the goroutine that asked for it even when that goroutine
// ends locked to its thread (as netns.Do's do): the thread's end would send
// the child its parent death signal had it been forked there.
func TestChildOutlivesCallersThread(t *testing.T) {
	// Several: a locked goroutine that happens to run on the main thread
	// wedges it rather than end it.
	const children = 4
	exited := make(chan error, children)
	for i := 0; i < children; i++ {
		cmd := exec.Command("sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		var wait func() error
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends here
			var err error
			wait, err = Start(cmd)
			errc <- err
		}()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		go func() { exited <- wait() }()
		defer func() { _ = cmd.Process.Kill() }()
	}
	select {
	case err := <-exited:
		t.Fatalf("a child ended with its caller's thread: %v", err)
	case <-time.After(time.Second):
	}
}
