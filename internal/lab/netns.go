package lab

import (
	"bytes"
	"fmt"
	"os"
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

// sysctl sets kernel parameters ("net.ipv4.ip_forward", "1", ...) inside a
// network namespace. /proc/sys/net belongs to the namespace of the thread
// that opens it, so a write from a thread moved into ns is enough.
func sysctl(ns string, kv ...string) error {
	return inNamespace(ns, func() error {
		for i := 0; i+1 < len(kv); i += 2 {
			path := "/proc/sys/" + strings.ReplaceAll(kv[i], ".", "/")
			if err := os.WriteFile(path, []byte(kv[i+1]), 0o644); err != nil {
				return fmt.Errorf("sysctl %s=%s in %s: %w", kv[i], kv[i+1], ns, err)
			}
		}
		return nil
	})
}

// addNamespace creates a network namespace and sets its sysctls before any
// interface exists, so that new interfaces inherit the defaults.
func addNamespace(name string, kv ...string) error {
	if err := ip("netns", "add", name); err != nil {
		return err
	}
	return sysctl(name, kv...)
}

// noDAD turns off IPv6 duplicate address detection for the interfaces that
// will be made in ns: lab addresses are unique by construction, and a
// tentative link-local address would delay the first packets of a new
// namespace by a second or two.
var noDAD = []string{"net.ipv6.conf.all.accept_dad", "0", "net.ipv6.conf.default.accept_dad", "0"}

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
