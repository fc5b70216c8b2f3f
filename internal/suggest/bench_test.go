package suggest

import (
	"slices"
	"testing"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkSuggest10k1M is netpol suggest's work at the scale:
// read a million record lines, suggest, build the cluster with the
// suggestion and verify it. The cluster before is built outside the
// timer, as any command reads its input.
func BenchmarkSuggest10k1M(b *testing.B) {
	objs, workloads, ports := synth.Apps()
	before, _, err := pipeline.Build(objs, nil, pipeline.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const lines = 1_000_000
	records := synth.Records(workloads, ports, lines)
	var r Report
	var policies int
	for b.Loop() {
		flows, _, err := ReadFlows(records)
		if err != nil {
			b.Fatal(err)
		}
		nps, err := Suggest(before.Cluster(), flows, Options{Enforce: true})
		if err != nil {
			b.Fatal(err)
		}
		withPolicies := slices.Clip(objs)
		for _, np := range nps {
			withPolicies = append(withPolicies, source.Object{Origin: diag.Origin{File: "suggested"}, Kind: np.GetObjectKind().GroupVersionKind().Kind, Namespace: np.GetNamespace(), Name: np.GetName(), Value: np})
		}
		after, _, err := pipeline.Build(withPolicies, nil, pipeline.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if r, err = Verify(before, after, flows); err != nil {
			b.Fatal(err)
		}
		policies = len(nps)
	}
	b.ReportMetric(float64(lines)/(b.Elapsed().Seconds()/float64(b.N)), "lines/s")
	b.ReportMetric(float64(policies), "policies")
	b.ReportMetric(float64(r.Flows), "distinct-flows")
	b.ReportMetric(float64(r.Cells), "cells")
}
