package state

import (
	"hash/fnv"
	"strings"
	"testing"
)

// TestHash64IsFNV1a holds hash64, which generated names and addresses
// depend on, to the FNV-1a of the concatenated parts, which it was before
// it stopped concatenating them.
func TestHash64IsFNV1a(t *testing.T) {
	for _, parts := range [][]string{{}, {""}, {"pod/", "shop/web-0"}, {"template/shop/web"}, {"a", "", "bc"}} {
		h := fnv.New64a()
		h.Write([]byte(strings.Join(parts, "")))
		if got, want := hash64(parts...), h.Sum64(); got != want {
			t.Errorf("hash64(%q) = %#x, FNV-1a %#x", parts, got, want)
		}
	}
}
