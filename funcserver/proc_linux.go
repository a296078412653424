package funcserver

import "syscall"

// childAttr puts a child in its own process group, so a kill reaches what it
// spawned and a terminal's ^C reaches only funcserver, and kills it if
// funcserver dies first.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}
