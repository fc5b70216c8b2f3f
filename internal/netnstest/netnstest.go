// Package netnstest runs test code against the real kernel in a network
// namespace of its own, so that nftables tables and netlink sockets never
// touch the host's. It is for tests only and imports nothing of netpol.
package netnstest

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// Run calls fn on a thread moved into a new, unnamed network namespace:
// the nft processes and netlink sockets fn makes inherit it, and it
// vanishes when Run returns. Without root or nft the test is skipped, or
// fails under CI=true, where the kernel is part of what is tested.
func Run(tb testing.TB, fn func()) {
	tb.Helper()
	if os.Geteuid() != 0 || exec.Command("nft", "--version").Run() != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("needs root and nft (CI=true: failing, not skipping)")
		}
		tb.Skip("needs root and nft")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		tb.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		// A thread left in the test's namespace would run other
		// goroutines there: better to stop.
		if err := netns.Set(orig); err != nil {
			panic("cannot restore the network namespace: " + err.Error())
		}
		ns.Close()
	}()
	fn()
}
