package compile

import (
	"net/netip"
	"strings"
	"testing"
)

func TestSubtract(t *testing.T) {
	cases := []struct {
		block  string
		except []string
		want   string
	}{
		{"198.18.0.0/24", nil, "198.18.0.0/24"},
		{"198.18.0.0/24", []string{"198.18.0.128/25"}, "198.18.0.0/25"},
		{"198.18.0.0/24", []string{"198.18.0.0/26"}, "198.18.0.128/25 198.18.0.64/26"},
		{"198.18.0.0/24", []string{"198.18.0.5/32"}, "198.18.0.128/25 198.18.0.64/26 198.18.0.32/27 198.18.0.16/28 198.18.0.8/29 198.18.0.0/30 198.18.0.6/31 198.18.0.4/32"},
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
