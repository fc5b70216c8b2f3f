package source

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzPlainNames: what the plain checks of names.go accept, the API
// server's checks accept too.
func FuzzPlainNames(f *testing.F) {
	for _, s := range []string{"web", "web-0", "a.b.c", "app.kubernetes.io/name", "kubernetes.io/metadata.name", "A_b.c", "-x", "x-", "a..b", "a/b/c", "", "a/", "/a", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if plainLabel(s, false) && len(validation.IsDNS1123Label(s)) > 0 {
			t.Errorf("plainLabel(%q, false), but IsDNS1123Label: %v", s, validation.IsDNS1123Label(s))
		}
		if plainLabel(s, true) && len(validation.IsValidLabelValue(s)) > 0 {
			t.Errorf("plainLabel(%q, true), but IsValidLabelValue: %v", s, validation.IsValidLabelValue(s))
		}
		if plainSubdomain(s) && len(validation.IsDNS1123Subdomain(s)) > 0 {
			t.Errorf("plainSubdomain(%q), but IsDNS1123Subdomain: %v", s, validation.IsDNS1123Subdomain(s))
		}
		if plainKey(s) && len(validation.IsQualifiedName(s)) > 0 {
			t.Errorf("plainKey(%q), but IsQualifiedName: %v", s, validation.IsQualifiedName(s))
		}
	})
}

// TestPlainNamesTakeTheFastPath: the names and labels a cluster is made
// of are plain, so the regular expressions are not asked about them.
func TestPlainNamesTakeTheFastPath(t *testing.T) {
	for _, c := range []struct {
		s                    string
		label, value, sub, k bool
	}{
		{"coredns-0", true, true, true, true},
		{"kube-system", true, true, true, true},
		{"app.kubernetes.io/name", false, false, false, true},
		{"kubernetes.io/metadata.name", false, false, false, true},
		{"a.b.c", false, true, true, true},
		{"Web_1", false, true, false, true},
		{"-x", false, false, false, false},
		{"", false, false, false, false},
	} {
		if plainLabel(c.s, false) != c.label || plainLabel(c.s, true) != c.value || plainSubdomain(c.s) != c.sub || plainKey(c.s) != c.k {
			t.Errorf("%q: label %v value %v subdomain %v key %v, want %v %v %v %v", c.s,
				plainLabel(c.s, false), plainLabel(c.s, true), plainSubdomain(c.s), plainKey(c.s), c.label, c.value, c.sub, c.k)
		}
	}
}
