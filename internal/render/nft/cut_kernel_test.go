package nft_test

import (
	"context"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/render/nft"
)

// TestLabAdversarialHoldPastCapacity: a cut of more connections than a cut
// set holds, and a later cut into a set that earlier holds filled, must
// still hold every one of them (by address pair and protocol past the
// room), never cut one without a hold.
func TestLabAdversarialHoldPastCapacity(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		r := nft.New(nf)
		ctx := context.Background()
		if _, err := r.Sync(ctx, compileYAML(t, cluster)); err != nil {
			t.Fatal(err)
		}
		conn := func(i int) l4.Conn {
			dst := netip.AddrFrom4([4]byte{198, 18, 200, byte(i / 60000)})
			return l4.Conn{Proto: l4.TCP, Src: netip.AddrPortFrom(netip.MustParseAddr("198.18.1.1"), uint16(1+i%60000)), Dst: netip.AddrPortFrom(dst, 80)}
		}
		var conns []l4.Conn
		for i := range nft.CutCapacity + 1 {
			conns = append(conns, conn(i))
		}
		if err := r.Hold(ctx, conns); err != nil {
			t.Fatalf("holding %d connections: %v", len(conns), err)
		}
		// The set is full now: the next cut's connection too must be held.
		late := l4.Conn{Proto: l4.UDP, Src: netip.MustParseAddrPort("198.18.1.7:5353"), Dst: netip.MustParseAddrPort("198.18.201.1:53")}
		if err := r.Hold(ctx, []l4.Conn{late}); err != nil {
			t.Fatalf("holding one more connection into a full set: %v", err)
		}
		out, err := exec.Command("nft", "list", "set", "inet", nft.TableName, "cut-pairs-4").CombinedOutput()
		if err != nil {
			t.Fatalf("listing cut-pairs-4: %v: %s", err, out)
		}
		for _, want := range []string{"198.18.1.1 . 198.18.200.1 . tcp", "198.18.1.7 . 198.18.201.1 . udp"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("cut-pairs-4 does not hold %q:\n%s", want, out)
			}
		}
	})
}
