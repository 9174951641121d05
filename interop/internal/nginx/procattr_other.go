//go:build !linux

package nginx

import "syscall"

// procAttr is nil where the kernel cannot kill nginx with its parent: a
// test binary killed or timed out may leave an nginx behind.
func procAttr() *syscall.SysProcAttr { return nil }
