//go:build !linux

package jsworker

import "syscall"

// childAttr is empty where the kernel cannot tie a child's life to its
// parent's: a worker notices its server is gone when fd 3 closes.
func childAttr() *syscall.SysProcAttr { return nil }

// socketPair makes the connected pair of the worker's fd 3, both ends
// closed on exec (the child's end is passed on explicitly). Without
// SOCK_CLOEXEC the flag is set right after, under the fork lock, so that
// no process started meanwhile inherits the ends.
func socketPair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds, nil
}
