// Package subprocess starts child processes that carry a parent death
// signal safely.
package subprocess

import (
	"os/exec"
	"runtime"
)

// Start starts cmd from an OS thread kept for the child's whole life and
// returns the child's Wait, to be called once. The parent death signal
// (SysProcAttr.Pdeathsig) fires when the thread that forked the child ends,
// not the process, and Go ends threads: a goroutine that exits while locked
// to its thread, as netns.Do's do, takes the thread with it
// (golang/go#27505), and a child forked from that thread earlier would be
// killed.
func Start(cmd *exec.Cmd) (wait func() error, err error) {
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, after the
		// child was reaped.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return func() error { return <-done }, nil
}
