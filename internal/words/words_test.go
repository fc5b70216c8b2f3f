package words_test

import (
	"testing"

	"github.com/netpol/netpol/internal/words"
)

func TestCount(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{words.Count(0, "pod"), "0 pods"},
		{words.Count(1, "pod"), "1 pod"},
		{words.Count(2, "error"), "2 errors"},
		{words.CountAs(1, "policy", "policies"), "1 policy"},
		{words.CountAs(3, "policy", "policies"), "3 policies"},
		{words.CountAs(1, "info", "info"), "1 info"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
