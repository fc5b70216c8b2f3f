package nft

import (
	"strings"
	"testing"
)

func TestAdversarialCommentText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"AdminNetworkPolicy deny-all allow-dns", "AdminNetworkPolicy deny-all allow-dns"},
		{`x" ; insert rule inet netpol forward accept ; #`, `x? ; insert rule inet netpol forward accept ; #`},
		{"a\nb\\c\x00\x7f", "a?b?c??"},
		{"é\xff", "??"},
		{strings.Repeat("a", 128), strings.Repeat("a", 128)},
		{strings.Repeat("a", 129), strings.Repeat("a", 125) + "..."},
		{strings.Repeat("é", 200), strings.Repeat("?", 125) + "..."},
	} {
		if got := commentText(c.in); got != c.want {
			t.Errorf("commentText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
