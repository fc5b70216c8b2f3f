package dnsproxy

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/netnstest"
)

// BenchmarkLearn10k: what learning costs, in the real kernel: 10,000
// answers, each for another name with another address, learned one by one
// into a domain set as the proxy does (one netlink transaction each, with
// its timeout), so that the set ends with 10,000 elements. Reports the time
// per answer (the part of the proxy's hold that is learning), and the
// agent's heap per learned address.
//
//	go test -run '^$' -bench Learn10k -benchtime 1x ./internal/dnsproxy
func BenchmarkLearn10k(b *testing.B) {
	const n = 10_000
	answers := make([][]byte, n)
	for i := range answers {
		addr := netip.AddrFrom4([4]byte{198, 18 + byte(i>>16), byte(i >> 8), byte(i)})
		answers[i] = answer(b, fmt.Sprintf("h%d.allowed.test", i), "A "+addr.String()+" 300")
	}
	netnstest.Run(b, func() {
		nf, err := knftables.New(knftables.InetFamily, "netpol")
		if err != nil {
			b.Fatal(err)
		}
		for range b.N {
			tx := nf.NewTransaction()
			tx.Add(&knftables.Table{})
			tx.Delete(&knftables.Table{})
			tx.Add(&knftables.Table{})
			for _, fam := range []string{"ipv4_addr", "ipv6_addr"} {
				tx.Add(&knftables.Set{Name: "d-bench-" + fam[3:4], Type: fam, Flags: []knftables.SetFlag{knftables.TimeoutFlag}})
			}
			if err := nf.Run(context.Background(), tx); err != nil {
				b.Fatal(err)
			}
			w := dataplane.Elements{Family: unix.NFPROTO_INET, Table: "netpol"}
			l := newLearner(Limits{MinTTL: time.Minute, MaxTTL: time.Hour, MaxAddresses: 100_000},
				func(e []dataplane.Element) error { return w.Write(e, dataplane.Unused{}) })
			l.setTargets([]*compile.DomainSet{{Name: "d-bench", Patterns: []string{"*.allowed.test"}}}, nil)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			for _, a := range answers {
				l.learn(a, asked)
			}
			took := time.Since(start)
			runtime.GC()
			runtime.ReadMemStats(&after)
			if st := l.Stats(); st.Learned != n || st.Errors != 0 {
				b.Fatalf("stats %+v, want %d learned", st, n)
			}
			out, err := exec.Command("nft", "list", "set", "inet", "netpol", "d-bench-4").CombinedOutput()
			if err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			if got := strings.Count(string(out), "timeout 5m"); got != n {
				b.Fatalf("the kernel's set holds %d elements with their timeout, want %d", got, n)
			}
			b.ReportMetric(float64(took.Microseconds())/n, "µs/answer")
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n, "heap-B/address")
		}
	})
}
