package kubetest

import "testing"

// StopAPIServer kills the API server as a crash or an outage would: no
// graceful goodbye, clients lose their connections and watches mid-stream;
// etcd keeps the data. (A graceful stop would wait for the open watches.)
func (c *Cluster) StopAPIServer(t testing.TB) {
	t.Helper()
	if c.apiserver == nil {
		t.Fatal("kubetest: the API server is not running")
	}
	if err := c.apiserver.kill(); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	c.apiserver = nil
}

// StartAPIServer starts the stopped API server again, on the same address
// with the same data and credentials, and waits until it is ready.
func (c *Cluster) StartAPIServer(t testing.TB) {
	t.Helper()
	if c.apiserver != nil {
		t.Fatal("kubetest: the API server is running")
	}
	c.apiserver = c.restart(t)
}

// APIServerPID is the process ID of the running API server, for tests that
// measure what it spends (its CPU time and memory in /proc); 0 while it is
// stopped.
func (c *Cluster) APIServerPID() int {
	if c.apiserver == nil {
		return 0
	}
	return c.apiserver.cmd.Process.Pid
}
