package diff

import (
	"testing"

	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkDiff compares two engines built from two copies of a synthetic
// cluster (internal/synth): "same" as they are (diff A A), "pr" with the
// second changed as a small pull request changes a cluster
// (synth.SmallPR). The time is Compare alone, after both engines are
// built. The 100k-pod cluster is skipped in -short mode, and its pull request always: the
// admin rule it turns around selects some 6,000 pods, and every other
// class is asked about each of their classes (over 7 minutes and 7 GB, not
// measured to the end).
func BenchmarkDiff(b *testing.B) {
	for _, size := range []synth.Size{synth.Size1k, synth.Size10k, synth.Size100k} {
		for _, change := range []string{"same", "pr"} {
			b.Run(size.Name+"/"+change, func(b *testing.B) {
				switch {
				case testing.Short() && size.Pods > 10000:
					b.Skip("100k-pod cluster skipped in -short mode")
				case size.Pods > 10000 && change == "pr":
					b.Skip("a pull request on the 100k-pod cluster takes too long to measure")
				}
				newObjs := synth.Cluster(size)
				if change == "pr" {
					newObjs = synth.SmallPR(newObjs)
				}
				old, new := loadObjects(b, synth.Cluster(size)), loadObjects(b, newObjs)
				var r *Result
				for b.Loop() {
					r = Compare(old, new, Options{})
				}
				b.ReportMetric(float64(r.Summary.PodPairs), "pod-pairs")
				b.ReportMetric(float64(r.Summary.Gained+r.Summary.Lost+r.Summary.Changed), "entries")
			})
		}
	}
}
