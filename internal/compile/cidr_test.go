package compile

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/synth"
)

func TestSubtract(t *testing.T) {
	cases := []struct {
		block  string
		except []string
		want   string
	}{
		{"198.18.0.0/24", nil, "198.18.0.0/24"},
		{"198.18.0.0/24", []string{"198.18.0.128/25"}, "198.18.0.0/25"},
		{"198.18.0.0/24", []string{"198.18.0.0/26"}, "198.18.0.64/26 198.18.0.128/25"},
		{"198.18.0.0/24", []string{"198.18.0.5/32"}, "198.18.0.0/30 198.18.0.4/32 198.18.0.6/31 198.18.0.8/29 198.18.0.16/28 198.18.0.32/27 198.18.0.64/26 198.18.0.128/25"},
		{"198.18.0.0/24", []string{"198.18.0.200/32", "198.18.0.0/25", "198.18.0.0/26", "fd00::/8"}, "198.18.0.128/26 198.18.0.192/29 198.18.0.201/32 198.18.0.202/31 198.18.0.204/30 198.18.0.208/28 198.18.0.224/27"},
		{"198.18.0.0/24", []string{"198.18.0.0/16"}, ""},
		{"198.18.0.0/24", []string{"198.19.0.0/24"}, "198.18.0.0/24"},
		{"fd00::/64", []string{"fd00::8000:0:0:0/65"}, "fd00::/65"},
	}
	for _, c := range cases {
		var except []netip.Prefix
		for _, e := range c.except {
			except = append(except, netip.MustParsePrefix(e))
		}
		var got []string
		for _, p := range Subtract(netip.MustParsePrefix(c.block), except) {
			got = append(got, p.String())
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s except %v = %v, want %s", c.block, c.except, got, c.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	in := []netip.Prefix{netip.MustParsePrefix("198.18.1.2/32"), netip.MustParsePrefix("fd00::1/128"),
		netip.MustParsePrefix("198.18.0.0/16"), netip.MustParsePrefix("198.18.1.3/32"), netip.MustParsePrefix("198.20.0.1/32")}
	var got []string
	for _, p := range Normalize(in) {
		got = append(got, p.String())
	}
	if want := "198.18.0.0/16 198.20.0.1/32 fd00::1/128"; strings.Join(got, " ") != want {
		t.Errorf("Normalize = %v, want %s", got, want)
	}
}

// TestAdversarialSubtractSpread: 2,000 exceptions spread over fd00::/8
// leave exactly the block without them. policy.IPBlock.Contains, which
// tests each exception in turn, is the reference: at every exception, its
// neighbours, and the first and last address of every prefix of the
// result, the two agree.
func TestAdversarialSubtractSpread(t *testing.T) {
	block := policy.IPBlock{CIDR: netip.MustParsePrefix("fd00::/8")}
	for _, o := range synth.ExceptPolicy(2000) {
		if np, ok := o.Value.(*networkingv1.NetworkPolicy); ok {
			for _, e := range np.Spec.Ingress[0].From[0].IPBlock.Except {
				block.Except = append(block.Except, netip.MustParsePrefix(e))
			}
		}
	}
	if len(block.Except) != 2000 {
		t.Fatalf("%d exceptions, want 2000", len(block.Except))
	}
	got := Subtract(block.CIDR, block.Except)
	byAddr := map[netip.Addr]bool{}
	for _, e := range block.Except {
		byAddr[e.Addr()] = true
		byAddr[e.Addr().Prev()] = true
		byAddr[e.Addr().Next()] = true
	}
	for i, p := range got {
		if i > 0 && got[i-1].Addr().Compare(p.Addr()) >= 0 {
			t.Fatalf("not in address order: %v then %v", got[i-1], p)
		}
		if i%20 == 0 { // the reference is slow: a sample of the edges
			byAddr[p.Addr()] = true
			byAddr[LastAddr(p)] = true
		}
	}
	sorted := Normalize(got)
	if len(sorted) != len(got) {
		t.Fatalf("%d prefixes overlap", len(got)-len(sorted))
	}
	for a := range byAddr {
		want := block.Contains(a)
		// got is sorted and without overlaps: the prefix that may hold a
		// is the last one starting at or before it.
		j, _ := slices.BinarySearchFunc(got, a, func(p netip.Prefix, a netip.Addr) int { return p.Addr().Compare(a) })
		has := j < len(got) && got[j].Contains(a) || j > 0 && got[j-1].Contains(a)
		if has != want {
			t.Fatalf("%v: in the difference %v, in the block %v", a, has, want)
		}
	}
}
