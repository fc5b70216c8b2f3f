package engine_test

import (
	"slices"
	"testing"

	"github.com/netpol/netpol/internal/engine"
)

func TestRepresentatives(t *testing.T) {
	reps, pair := engine.Representatives([][]string{{"a1", "a2", "a3"}, {"b1"}, {"c1", "c2"}})
	if want := []string{"a1", "a2", "b1", "c1", "c2"}; !slices.Equal(reps, want) {
		t.Fatalf("reps %q, want %q", reps, want)
	}
	for _, tc := range []struct {
		a, b, src, dst int
		ok             bool
	}{
		{0, 0, 0, 1, true}, // a1 -> a2: a group towards itself uses two members
		{0, 1, 0, 2, true},
		{1, 0, 2, 0, true},
		{1, 1, 0, 0, false}, // b has one member: no pair of distinct pods
		{2, 2, 3, 4, true},
		{1, 2, 2, 3, true},
	} {
		src, dst, ok := pair(tc.a, tc.b)
		if ok != tc.ok || ok && (src != tc.src || dst != tc.dst) {
			t.Errorf("pair(%d, %d) = %d, %d, %v; want %d, %d, %v", tc.a, tc.b, src, dst, ok, tc.src, tc.dst, tc.ok)
		}
	}
}
