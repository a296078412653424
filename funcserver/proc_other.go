//go:build !linux

package funcserver

import "syscall"

func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}
