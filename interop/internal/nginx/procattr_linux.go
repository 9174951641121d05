package nginx

import "syscall"

// procAttr makes the kernel kill nginx when the process that started it
// dies, so that a test binary killed or timed out (its cleanups never run)
// leaves no nginx behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
