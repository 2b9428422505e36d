package proc

import "syscall"

// sysProcAttr kills the child when the thread that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
