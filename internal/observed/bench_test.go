package observed_test

import (
	"net/netip"
	"testing"

	"github.com/netpol/netpol/internal/dataplane/nflog"
	"github.com/netpol/netpol/internal/observed"
	"github.com/netpol/netpol/internal/render/nft"
)

// BenchmarkRecord: the cost of one recorded connection, folded into one
// of 10,000 entries (1,000 sources x 10 ports), addresses named by a map
// as the agent's cluster does.
func BenchmarkRecord(b *testing.B) {
	names := map[netip.Addr]string{}
	var pkts []nflog.Packet
	dst := netip.MustParseAddr("198.19.0.1")
	names[dst] = "shop/StatefulSet/db"
	for i := range 1000 {
		src := netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
		names[src] = "shop/Deployment/web-" + string(rune('a'+i%26))
		for p := range 10 {
			pkts = append(pkts, nflog.Packet{Prefix: nft.RecordAllowPrefix, Src: src, Dst: dst, Proto: 6, DstPort: uint16(8000 + p), Time: t0})
		}
	}
	r := observed.New(observed.Options{})
	r.Update(func(a netip.Addr) string { return names[a] })
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r.Record(pkts[i%len(pkts)])
	}
	b.ReportMetric(float64(r.Stats().Flows), "entries")
}
