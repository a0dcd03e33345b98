//go:build !linux

package jsworker

import "syscall"

// childAttr is empty where the kernel cannot tie a child's life to its
// parent's: a worker notices its server is gone when fd 3 closes.
func childAttr() *syscall.SysProcAttr { return nil }
