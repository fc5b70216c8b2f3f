//go:build !linux

package kubetest

import "syscall"

// sysProcAttr has nothing to add where there is no parent-death signal; a
// test binary that dies without its Cleanups leaves its children running.
func sysProcAttr() *syscall.SysProcAttr { return nil }
