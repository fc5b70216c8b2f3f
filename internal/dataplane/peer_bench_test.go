package dataplane_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	gnft "github.com/google/nftables"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/netnstest"
)

// BenchmarkElementsPeers: adding n addresses to an interval set and
// deleting them again (one transaction each), as the agent does when pods
// join and leave a selector, with netpol's netlink batch and with
// github.com/google/nftables (the library knftables' authors point to for
// netlink) on the same kernel, in one run.
//
//	go test -run '^$' -bench ElementsPeers ./internal/dataplane
func BenchmarkElementsPeers(b *testing.B) {
	for _, n := range []int{1, 100, 10_000} {
		addrs := make([]netip.Addr, n)
		for i := range addrs {
			addrs[i] = netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
		}
		b.Run(fmt.Sprintf("netpol/%d", n), func(b *testing.B) {
			netnstest.Run(b, func() {
				set(b)
				w := dataplane.Elements{Family: unix.NFPROTO_INET, Table: "netpol"}
				add, del := make([]dataplane.Element, n), make([]dataplane.Element, n)
				for i, a := range addrs {
					add[i] = dataplane.Element{Set: "a4", Interval: true, Prefix: netip.PrefixFrom(a, 32)}
					del[i] = add[i]
					del[i].Delete = true
				}
				b.ResetTimer()
				for range b.N {
					if err := w.Write(add, dataplane.Unused{}); err != nil {
						b.Fatal(err)
					}
					if err := w.Write(del, dataplane.Unused{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run(fmt.Sprintf("google-nftables/%d", n), func(b *testing.B) {
			netnstest.Run(b, func() {
				set(b)
				c, err := gnft.New()
				if err != nil {
					b.Fatal(err)
				}
				table := &gnft.Table{Name: "netpol", Family: gnft.TableFamilyINet}
				s, err := c.GetSetByName(table, "a4")
				if err != nil {
					b.Fatal(err)
				}
				var elems []gnft.SetElement
				for _, a := range addrs {
					next := a.Next().As4()
					elems = append(elems, gnft.SetElement{Key: a.AsSlice()}, gnft.SetElement{Key: next[:], IntervalEnd: true})
				}
				b.ResetTimer()
				for range b.N {
					if err := c.SetAddElements(s, elems); err != nil {
						b.Fatal(err)
					}
					if err := c.Flush(); err != nil {
						// What the library cannot do is the result here.
						b.Skipf("github.com/google/nftables cannot send %d interval elements in one transaction: %v", n, err)
					}
					if err := c.SetDeleteElements(s, elems); err != nil {
						b.Fatal(err)
					}
					if err := c.Flush(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// set makes table inet netpol with the interval set a4.
func set(b *testing.B) {
	nf, err := knftables.New(knftables.InetFamily, "netpol")
	if err != nil {
		b.Fatal(err)
	}
	tx := nf.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Add(&knftables.Set{Name: "a4", Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}})
	if err := nf.Run(context.Background(), tx); err != nil {
		b.Fatal(err)
	}
}
