package kubetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// stopGrace is how long a process gets to exit after SIGTERM before it is
// killed. etcd and the API server both shut down in well under a second
// when nothing is connected; the grace only matters when they hang.
const stopGrace = 5 * time.Second

// process is a child started for one test and stopped by its Cleanup.
type process struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // why it exited; read only after done is closed
	stopped bool          // by stop: the cleanup has nothing left to do
}

// startProcess runs bin with args, its stdout and stderr appended to
// logPath, and registers a Cleanup that stops it.
func startProcess(t testing.TB, bin, logPath string, args ...string) *process {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("kubetest: start %s: %v", bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.stopped {
			return
		}
		// A test that already failed has said why, likely this very exit.
		if err := p.stop(); err != nil && !t.Failed() {
			t.Errorf("kubetest: %v", err)
		}
	})
	return p
}

// stop ends the process by its PID: SIGTERM, then SIGKILL after stopGrace.
// An exit caused by our own SIGTERM is not an error; any other exit is.
func (p *process) stop() error {
	p.stopped = true
	select {
	case <-p.done:
		return fmt.Errorf("%s exited while the test ran: %v", p.cmd.Path, p.err)
	default:
	}
	name := p.cmd.Path
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s (pid %d): %w", name, p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", name, p.cmd.Process.Pid, err)
	}
	<-p.done
	return fmt.Errorf("%s (pid %d) ignored SIGTERM for %v and was killed", name, p.cmd.Process.Pid, stopGrace)
}

// kill ends the process at once (SIGKILL), as a crash would.
func (p *process) kill() error {
	p.stopped = true
	select {
	case <-p.done:
		return fmt.Errorf("%s exited while the test ran: %v", p.cmd.Path, p.err)
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", p.cmd.Path, p.cmd.Process.Pid, err)
	}
	<-p.done
	return nil
}
