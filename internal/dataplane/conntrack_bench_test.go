package dataplane_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/netnstest"
)

// BenchmarkConntrackCut measures one Cut over a table of 100,000 TCP
// entries (in a network namespace of its own): "keep-all" judges every
// entry and deletes none (a change that denies nothing that is open);
// "cut-1pct" deletes the 1,000 entries to port 9 (held first: the hold is
// a no-op here, the renderer's cost is measured with nft). Setup (creating
// the entries over netlink) is not timed.
//
//	go test ./internal/dataplane -run XXX -bench ConntrackCut -benchtime 5x
func BenchmarkConntrackCut(b *testing.B) {
	const entries = 100_000
	netnstest.Run(b, func() {
		fill := func() {
			for i := range entries {
				port := uint16(80)
				if i%100 == 0 {
					port = 9
				}
				src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(1 + i>>16), byte(i >> 8)}), uint16(1024+i&0xff))
				flow := &netlink.ConntrackFlow{
					FamilyType: unix.AF_INET,
					Forward: netlink.IPTuple{Protocol: unix.IPPROTO_TCP, SrcIP: src.Addr().AsSlice(), SrcPort: src.Port(),
						DstIP: []byte{198, 19, 0, 1}, DstPort: port},
					Reverse: netlink.IPTuple{Protocol: unix.IPPROTO_TCP, SrcIP: []byte{198, 19, 0, 1}, SrcPort: port,
						DstIP: src.Addr().AsSlice(), DstPort: src.Port()},
					TimeOut:   600,
					ProtoInfo: &netlink.ProtoInfoTCP{State: 3},
				}
				if err := netlink.ConntrackCreate(netlink.ConntrackTable, unix.AF_INET, flow); err != nil {
					b.Fatalf("entry %d: %v", i, err)
				}
			}
		}
		fill()
		hold := func([]l4.Conn) error { return nil }
		b.Run("keep-all", func(b *testing.B) {
			for b.Loop() {
				n, err := dataplane.Conntrack{}.Cut(context.Background(), func(l4.Conn) bool { return true }, hold)
				if err != nil || n != 0 {
					b.Fatalf("cut %d, %v", n, err)
				}
			}
		})
		b.Run("cut-1pct", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				if err := netlink.ConntrackTableFlush(netlink.ConntrackTable); err != nil {
					b.Fatal(err)
				}
				fill()
				b.StartTimer()
				n, err := dataplane.Conntrack{}.Cut(context.Background(), func(c l4.Conn) bool { return c.Dst.Port() != 9 }, hold)
				if err != nil || n != entries/100 {
					b.Fatalf("cut %d, %v; want %d", n, err, entries/100)
				}
			}
		})
	})
}
