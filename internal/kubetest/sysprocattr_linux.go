package kubetest

import "syscall"

// sysProcAttr makes the kernel kill the child when the test binary dies
// without running its Cleanups (a panic, go test's -timeout), so no etcd or
// API server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
