package dataplane_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/netnstest"
)

// tracked makes a conntrack entry in the kernel: orig is the tuple as the
// client sent it (to a Service address when dnat is set), the reply comes
// from dnat (the backend) or from orig's destination.
func tracked(t *testing.T, proto uint8, src, dst, dnat netip.AddrPort) {
	t.Helper()
	back := dst
	if dnat.IsValid() {
		back = dnat
	}
	family := netlink.InetFamily(unix.AF_INET)
	if src.Addr().Is6() {
		family = unix.AF_INET6
	}
	flow := &netlink.ConntrackFlow{
		FamilyType: uint8(family),
		Forward: netlink.IPTuple{Protocol: proto, SrcIP: net.IP(src.Addr().AsSlice()), SrcPort: src.Port(),
			DstIP: net.IP(dst.Addr().AsSlice()), DstPort: dst.Port()},
		Reverse: netlink.IPTuple{Protocol: proto, SrcIP: net.IP(back.Addr().AsSlice()), SrcPort: back.Port(),
			DstIP: net.IP(src.Addr().AsSlice()), DstPort: src.Port()},
		TimeOut: 300,
	}
	if proto == unix.IPPROTO_TCP {
		flow.ProtoInfo = &netlink.ProtoInfoTCP{State: 3} // established
	}
	if err := netlink.ConntrackCreate(netlink.ConntrackTable, family, flow); err != nil {
		t.Fatalf("creating a conntrack entry: %v", err)
	}
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// TestLabFaultConntrackJudgesTheTranslatedTuple: entries of connections through
// a Service address are judged by the backend and target port they reached
// (what the rules see after DNAT), held before they are deleted, and only
// the rejected ones go.
func TestLabFaultConntrackJudgesTheTranslatedTuple(t *testing.T) {
	netnstest.Run(t, func() {
		// a -> Service 198.18.200.1:80, DNAT'd to b:8080 (denied below).
		tracked(t, unix.IPPROTO_TCP, ap("198.18.0.1:40000"), ap("198.18.200.1:80"), ap("198.18.0.2:8080"))
		// a -> Service 198.18.200.2:53, DNAT'd to c:5353 (allowed).
		tracked(t, unix.IPPROTO_UDP, ap("198.18.0.1:40001"), ap("198.18.200.2:53"), ap("198.18.0.3:5353"))
		// a -> b directly on IPv6, port 8080 (denied).
		tracked(t, unix.IPPROTO_TCP, ap("[fd00::1]:40002"), ap("[fd00::2]:8080"), netip.AddrPort{})

		var judged, held []l4.Conn
		n, err := dataplane.Conntrack{}.Cut(context.Background(), func(c l4.Conn) bool {
			judged = append(judged, c)
			return c.Dst.Port() != 8080
		}, func(conns []l4.Conn) error {
			held = append(held, conns...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		str := func(cs []l4.Conn) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.String())
			}
			slices.Sort(out)
			return out
		}
		wantJudged := []string{
			"tcp 198.18.0.1:40000 -> 198.18.0.2:8080",
			"tcp [fd00::1]:40002 -> [fd00::2]:8080",
			"udp 198.18.0.1:40001 -> 198.18.0.3:5353",
		}
		if got := str(judged); !slices.Equal(got, wantJudged) {
			t.Errorf("judged %q, want %q", got, wantJudged)
		}
		wantHeld := []string{"tcp 198.18.0.1:40000 -> 198.18.0.2:8080", "tcp [fd00::1]:40002 -> [fd00::2]:8080"}
		if got := str(held); n != 2 || !slices.Equal(got, wantHeld) {
			t.Errorf("cut %d, held %q; want 2 cut, held %q", n, got, wantHeld)
		}
		left, err := netlink.ConntrackTableList(netlink.ConntrackTable, unix.AF_INET)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0].Forward.DstPort != 53 {
			t.Errorf("IPv4 entries left: %v, want the UDP one to the Service port 53", left)
		}
	})
}

// TestLabFaultConntrackHoldFailsStillCuts: when the connections cannot be held,
// their entries go all the same and the hold's error is returned (a cut
// without the hold still stops a connection whose denied side speaks next).
func TestLabFaultConntrackHoldFailsStillCuts(t *testing.T) {
	netnstest.Run(t, func() {
		tracked(t, unix.IPPROTO_TCP, ap("198.18.0.1:40000"), ap("198.18.0.2:8080"), netip.AddrPort{})
		n, err := dataplane.Conntrack{}.Cut(context.Background(), func(l4.Conn) bool { return false },
			func([]l4.Conn) error { return net.ErrClosed })
		if !errors.Is(err, net.ErrClosed) || n != 1 {
			t.Errorf("cut %d, err %v; want 1 and the hold's error", n, err)
		}
		left, err := netlink.ConntrackTableList(netlink.ConntrackTable, unix.AF_INET)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 0 {
			t.Errorf("%d entries left, want none", len(left))
		}
	})
}

// TestLabGenerationCountsEveryWriter: the generation moves with every
// committed transaction, netpol's or anyone else's, and stays put
// otherwise.
func TestLabGenerationCountsEveryWriter(t *testing.T) {
	netnstest.Run(t, func() {
		g1, err := dataplane.Generation()
		if err != nil {
			t.Fatal(err)
		}
		g2, err := dataplane.Generation()
		if err != nil || g2 != g1 {
			t.Fatalf("asked twice: %d then %d (%v), want the same", g1, g2, err)
		}
		if out, err := exec.Command("nft", "add table inet other").CombinedOutput(); err != nil {
			t.Fatalf("nft: %v: %s", err, out)
		}
		g3, err := dataplane.Generation()
		if err != nil || g3 == g2 {
			t.Fatalf("after another writer's transaction: %d then %d (%v), want it moved", g2, g3, err)
		}
	})
}
