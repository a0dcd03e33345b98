package jsworker

import "syscall"

// childAttr makes the kernel kill a worker when the server dies, however
// it dies (kill -9 included), so that no worker outlives its server.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// socketPair makes the connected pair of the worker's fd 3, both ends
// closed on exec (the child's end is passed on explicitly).
func socketPair() ([2]int, error) {
	return syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
}
