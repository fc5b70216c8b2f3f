package nflog

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// TestLabNFLOG checks with the real kernel that an nftables log statement
// reaches a Reader: a UDP datagram sent inside a throwaway namespace is
// logged by the output hook and read back with its prefix and ports.
func TestLabNFLOG(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (CI=true)")
		}
		t.Skip("needs root")
	}
	ns := "netpol-nflog-test-" + strconv.Itoa(os.Getpid()) // two runs on one machine never share it
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	run(t, "ip", "-n", ns, "addr", "add", "198.18.7.1/32", "dev", "lo")
	run(t, "ip", "-n", ns, "addr", "add", "fd00::7:1/128", "dev", "lo", "nodad")
	nft := `table inet nflogtest {
  chain out { type filter hook output priority 0; policy accept;
    udp dport 9999 log group 7 prefix "np:0123456789ab:"
  }
}
`
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(nft)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}

	var r *Reader
	inNS(t, ns, func() {
		var err error
		if r, err = Open(7); err != nil {
			t.Fatal(err)
		}
	})
	defer r.Close()
	inNS(t, ns, func() {
		for _, dst := range []string{"198.18.7.1:9999", "[fd00::7:1]:9999"} {
			c, err := net.Dial("udp", dst)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			c.Close()
		}
	})

	got := map[netip.Addr]Packet{}
	done := make(chan error, 1)
	go func() {
		for len(got) < 2 {
			ps, err := r.Read()
			if err != nil {
				done <- err
				return
			}
			for _, p := range ps {
				got[p.Dst] = p
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		r.Close()
		t.Fatalf("no log messages from the kernel within 5s (got %v)", got)
	}
	for _, dst := range []string{"198.18.7.1", "fd00::7:1"} {
		p := got[netip.MustParseAddr(dst)]
		if p.Prefix != "np:0123456789ab:" || p.Src.String() != dst || p.Proto != 17 || p.DstPort != 9999 || p.SrcPort == 0 {
			t.Errorf("packet to %s: got %+v", dst, p)
		}
	}
}

func run(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// inNS runs fn on a thread in the named namespace; sockets made there stay
// in it.
func inNS(t testing.TB, name string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// A thread that cannot go back stays locked: the runtime then
		// ends it with the goroutine instead of reusing it.
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	fn()
}

// TestLabAdversarialReadNowWhileWaiting: ReadNow never waits, also while
// another goroutine is in Wait on the same reader (the DNS proxy's query
// log: its reader waits, and an answer that matches no query reads the
// socket dry). Waiting behind Wait, a forged answer stalled the proxy, and
// every held answer behind it, until some pod's next query was logged.
func TestLabAdversarialReadNowWhileWaiting(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (CI=true)")
		}
		t.Skip("needs root")
	}
	ns := "netpol-nflog-wait-" + strconv.Itoa(os.Getpid())
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	var r *Reader
	inNS(t, ns, func() {
		var err error
		if r, err = Open(8); err != nil {
			t.Fatal(err)
		}
	})
	waiting := make(chan error, 1)
	go func() { waiting <- r.Wait() }()
	time.Sleep(100 * time.Millisecond) // Wait is in the poller: nothing is logged in the namespace
	read := make(chan error, 1)
	go func() {
		ps, err := r.ReadNow()
		if err == nil && len(ps) != 0 {
			err = errors.New("packets from an empty log")
		}
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Errorf("ReadNow: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("ReadNow waited behind Wait for 10 s: nothing was logged, and it must not wait")
		r.Close()
		<-read
	}
	r.Close()
	<-waiting
}
