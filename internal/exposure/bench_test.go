package exposure

import (
	"testing"

	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkExposure: the exposure of every workload of the synthetic
// clusters, from a built engine (building it is BenchmarkLoad's).
//
//	go test ./internal/exposure -run '^$' -bench Exposure -benchtime 3x
func BenchmarkExposure(b *testing.B) {
	for _, size := range []synth.Size{synth.Size10k, synth.Size100k} {
		b.Run(size.Name, func(b *testing.B) {
			if testing.Short() && size.Name == "100k" {
				b.Skip("-short")
			}
			e, _, err := pipeline.Build(synth.Cluster(size), nil, pipeline.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var r *Report
			for b.Loop() {
				r = Of(e, Options{})
			}
			b.ReportMetric(float64(len(r.Workloads)), "workloads")
			b.ReportMetric(float64(len(r.Blocks)), "blocks")
		})
	}
}
