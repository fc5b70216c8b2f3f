package lint

import (
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/golden"
	"github.com/netpol/netpol/internal/synth"
)

// TestCellsAgreeWithPairs lints small random clusters (synth.Random: every
// policy API and peer shape, dual-stack and IPv6-only pods, relative
// namespace selections, colliding priorities) twice: with cells, and pair
// of classes by pair of classes as lint did before it grouped them. Every
// finding must be the same, to the example flow and the flow counts.
func TestCellsAgreeWithPairs(t *testing.T) {
	seeds := int64(600)
	if testing.Short() {
		seeds = 100
	}
	for seed := int64(1000); seed < 1000+seeds; seed++ {
		for variant := 0; variant < 2; variant++ {
			e, diags := loadYAML(t, synth.Random(seed, variant))
			var grouped, pairs strings.Builder
			writeFindings(&grouped, "grouped", newLinter(e).run(diags, Options{}))
			l := newLinter(e)
			l.pairwise = true
			writeFindings(&pairs, "grouped", l.run(diags, Options{}))
			if grouped.String() != pairs.String() {
				t.Fatalf("seed %d variant %d: %s\n%s", seed, variant, golden.FirstDifference(pairs.String(), grouped.String()), synth.Random(seed, variant))
			}
		}
	}
}
