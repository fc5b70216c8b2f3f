package lab

import (
	"bytes"
	"fmt"
	"os/exec"
	"runtime"
	"strings"

	"github.com/vishvananda/netns"
)

// ip runs one iproute2 command.
func ip(args ...string) error {
	cmd := exec.Command("ip", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// sysctl sets a kernel parameter inside a network namespace.
func sysctl(ns, key, value string) error {
	out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", key+"="+value).CombinedOutput()
	if err != nil {
		return fmt.Errorf("sysctl %s=%s in %s: %v: %s", key, value, ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNamespace runs fn on an OS thread switched into the named network
// namespace. Sockets made by fn stay in that namespace when used later from
// any thread.
func inNamespace(name string, fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := netns.GetFromName(name)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	fnErr := fn()
	if err := netns.Set(orig); err != nil {
		// The thread is in the wrong namespace: keep it locked so that it
		// dies with this goroutine instead of serving another.
		return fmt.Errorf("restoring network namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return fnErr
}

// namespaces lists the network namespaces whose name starts with prefix.
func namespaces(prefix string) ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			names = append(names, f[0])
		}
	}
	return names, nil
}
