package jsworker

import "syscall"

// childAttr makes the kernel kill a worker when the server dies, however
// it dies (kill -9 included), so that no worker outlives its server.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
