package engine

import (
	"slices"
	"testing"

	"github.com/netpol/netpol/internal/synth"
)

// TestLabelSetsResolveAsPodByPod resolves every selector of the 1k-pod
// synthetic cluster three ways — by label set, by label set with a budget
// that runs out part way, and pod by pod (as an index that next made does)
// — and wants the same members for every atom.
func TestLabelSetsResolveAsPodByPod(t *testing.T) {
	c, set := benchSnapshot(t, objectsOf(synth.Size1k))
	bySets := newEngine(newIndex(c, false), set, Options{}, nil)
	if bySets.ix.sets == nil || len(bySets.ix.sets.labels) >= len(c.Pods)/2 {
		t.Fatalf("label sets not in use, or as many as pods")
	}
	short := newIndex(c, false)
	short.sets.budget = 10 * len(short.sets.labels) // ten selectors, then pod by pod
	podByPod := newIndex(c, false)
	podByPod.sets = nil
	for name, ix := range map[string]*index{"budget run out": short, "pod by pod": podByPod} {
		e := newEngine(ix, set, Options{}, nil)
		if len(e.ix.podAtoms) != len(bySets.ix.podAtoms) {
			t.Fatalf("%s: %d atoms, by label set %d", name, len(e.ix.podAtoms), len(bySets.ix.podAtoms))
		}
		for a, atom := range e.ix.podAtoms {
			if want := bySets.ix.podAtoms[a].members; !slices.Equal(atom.members, want) {
				t.Errorf("%s: atom %d (%q): %d members, by label set %d", name, a, atom.sel.Text, len(atom.members), len(want))
			}
		}
	}
}
