package engine

import (
	"math/rand"
	"net/netip"
	"runtime"
	"sync"
	"testing"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/synth"
)

// The results and the command that produced them are in BENCHMARKS.md.

var benchSizes = []synth.Size{synth.Size1k, synth.Size10k, synth.Size100k}

// benchPorts are the ports of the matrix benchmark and of the explained flows.
var benchPorts = []l4.Port{{Proto: l4.TCP, Num: 80}, {Proto: l4.TCP, Num: 443}, {Proto: l4.UDP, Num: 53}, {Proto: l4.TCP, Num: 8080}}

// generated caches the objects of each size: generating 100k pods takes
// seconds and is not what is measured. state.Build and policy.Normalize do
// not modify the objects, so iterations can share them.
var generated struct {
	sync.Mutex
	objs map[string][]source.Object
}

func objectsOf(size synth.Size) []source.Object {
	generated.Lock()
	defer generated.Unlock()
	if generated.objs == nil {
		generated.objs = map[string][]source.Object{}
	}
	objs, ok := generated.objs[size.Name]
	if !ok {
		objs = synth.Cluster(size)
		generated.objs[size.Name] = objs
	}
	return objs
}

// benchLoad is what the CLI does between decoding and the first question: build
// the snapshot, normalise the policies, resolve every selector.
func benchLoad(tb testing.TB, objs []source.Object) *Engine {
	c, set := benchSnapshot(tb, objs)
	return New(c, set, Options{})
}

// benchSnapshot builds the cluster and normalises its policies; generated objects
// must load without errors.
func benchSnapshot(tb testing.TB, objs []source.Object) (*state.Cluster, *policy.Set) {
	c, diags := state.Build(objs, state.Options{})
	if err := diags.Err(); err != nil {
		tb.Fatalf("state.Build: %v", err)
	}
	set, diags := policy.Normalize(c.Policies)
	if err := diags.Err(); err != nil {
		tb.Fatalf("policy.Normalize: %v", err)
	}
	return c, set
}

func skipLarge(b *testing.B, size synth.Size) {
	if testing.Short() && size.Pods > 10000 {
		b.Skip("100k-pod cluster skipped in -short mode")
	}
}

// BenchmarkLoad measures state.Build + policy.Normalize + engine.New, which
// resolves every subject and peer selector to its members.
func BenchmarkLoad(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.Name, func(b *testing.B) {
			skipLarge(b, size)
			objs := objectsOf(size)
			b.ReportAllocs()
			var ms runtime.MemStats
			var heap, built, sys float64
			var stats SelectorStats
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				before := ms.HeapAlloc
				b.StartTimer()

				e := benchLoad(b, objs)

				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				heap = float64(ms.HeapAlloc) / (1 << 20)
				built = (float64(ms.HeapAlloc) - float64(before)) / (1 << 20)
				sys = float64(ms.Sys) / (1 << 20)
				stats = e.Stats()
				runtime.KeepAlive(e)
				b.StartTimer()
			}
			// Live heap after a GC with the engine alive, input objects
			// included (the CLI holds them too); MB-built is what the
			// snapshot, policy set and engine add to it; MB-sys is all the
			// process got from the OS so far, an upper bound of its peak.
			b.ReportMetric(heap, "MB-heap")
			b.ReportMetric(built, "MB-built")
			b.ReportMetric(sys, "MB-sys")
			b.ReportMetric(float64(stats.PodSelectors), "pod-selectors")
			b.ReportMetric(float64(stats.Memberships), "memberships")
		})
	}
}

// BenchmarkExplain measures one Decide, with its full trace, on random pod
// pairs and ports.
func BenchmarkExplain(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.Name, func(b *testing.B) {
			skipLarge(b, size)
			e := benchLoad(b, objectsOf(size))
			pods := e.Cluster().Pods
			r := rand.New(rand.NewSource(1))
			flows := make([]Flow, 4096)
			for i := range flows {
				src, dst := pods[r.Intn(len(pods))], pods[r.Intn(len(pods))]
				port := benchPorts[r.Intn(len(benchPorts))]
				f, err := e.NewFlow(e.PodEndpoint(src, netip.Addr{}), e.PodEndpoint(dst, netip.Addr{}), l4.PortSpec{Num: port.Num, Proto: port.Proto})
				if err != nil {
					b.Fatal(err)
				}
				flows[i] = f
			}
			// One untimed pass warms the caches and checks that the flows
			// exercise both outcomes.
			allowed := 0
			for _, f := range flows {
				if e.Decide(f).Allowed {
					allowed++
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				e.Decide(flows[i%len(flows)])
				i++
			}
			b.ReportMetric(100*float64(allowed)/float64(len(flows)), "%allowed")
		})
	}
}

// BenchmarkMatrix1k4Ports measures the full matrix of the 1k-pod cluster
// (1000 x 1000 pods x 4 ports).
func BenchmarkMatrix1k4Ports(b *testing.B) {
	e := benchLoad(b, objectsOf(synth.Size1k))
	pods := e.Cluster().Pods
	b.ReportAllocs()
	var m *Matrix
	for b.Loop() {
		m = e.Matrix(pods, pods, benchPorts)
	}
	allowed := 0
	for i := range m.Sources {
		for j := range m.Destinations {
			for k := range m.Ports {
				if m.Allowed(i, j, k) {
					allowed++
				}
			}
		}
	}
	b.ReportMetric(float64(m.SourceClasses), "src-classes")
	b.ReportMetric(float64(m.DestinationClasses), "dst-classes")
	b.ReportMetric(100*float64(allowed)/float64(len(m.allowed)), "%allowed")
}

// BenchmarkClassMatrixRows measures what matrix output costs before it is
// written: every row of the class matrix of the 1k-pod cluster, on the 4
// ports and on 40 ports (the segments of a connection list are of that
// order), where one walk of the tiers decides up to 64 ports.
func BenchmarkClassMatrixRows(b *testing.B) {
	e := benchLoad(b, objectsOf(synth.Size1k))
	pods := e.Cluster().Pods
	var many []l4.Port
	for n := uint16(1); len(many) < 40; n += 200 {
		many = append(many, l4.Port{Proto: l4.TCP, Num: n})
	}
	for _, tc := range []struct {
		name  string
		ports []l4.Port
	}{{"4ports", benchPorts}, {"40ports", many}} {
		b.Run(tc.name, func(b *testing.B) {
			m := e.ClassMatrix(pods, tc.ports)
			row := make([]bool, m.Classes()*len(tc.ports))
			b.ReportAllocs()
			for b.Loop() {
				for c := range m.Classes() {
					m.Row(c, row)
				}
			}
			b.ReportMetric(float64(m.Classes()), "classes")
		})
	}
}
