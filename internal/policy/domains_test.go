package policy

import "testing"

// TestDomainPatternMatches: the examples of the DomainName type's comment
// (network-policy-api v0.1.7 and v0.2.0), plus case and the trailing dot.
func TestDomainPatternMatches(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		// "`kubernetes.io` matches only `kubernetes.io`. It does not match
		// "www.kubernetes.io", "blog.kubernetes.io", "my-kubernetes.io", or
		// "wikipedia.org"."
		{"kubernetes.io", "kubernetes.io", true},
		{"kubernetes.io", "www.kubernetes.io", false},
		{"kubernetes.io", "blog.kubernetes.io", false},
		{"kubernetes.io", "my-kubernetes.io", false},
		{"kubernetes.io", "wikipedia.org", false},
		// "`blog.kubernetes.io` matches only "blog.kubernetes.io". It does
		// not match "www.kubernetes.io" or "kubernetes.io"."
		{"blog.kubernetes.io", "blog.kubernetes.io", true},
		{"blog.kubernetes.io", "www.kubernetes.io", false},
		{"blog.kubernetes.io", "kubernetes.io", false},
		// "`*.kubernetes.io` matches subdomains of kubernetes.io.
		// "www.kubernetes.io", "blog.kubernetes.io", and
		// "latest.blog.kubernetes.io" match, however "kubernetes.io", and
		// "wikipedia.org" do not."
		{"*.kubernetes.io", "www.kubernetes.io", true},
		{"*.kubernetes.io", "blog.kubernetes.io", true},
		{"*.kubernetes.io", "latest.blog.kubernetes.io", true},
		{"*.kubernetes.io", "kubernetes.io", false},
		{"*.kubernetes.io", "wikipedia.org", false},
		// "'*' ... does not support partial matches": a label that only
		// ends like the suffix is another name.
		{"*.kubernetes.io", "my-kubernetes.io", false},
		// DNS names compare case-insensitively; a trailing dot is the same
		// name, on either side.
		{"Kubernetes.IO", "kubernetes.io", true},
		{"kubernetes.io.", "kubernetes.io", true},
		{"*.Kubernetes.io.", "www.kubernetes.io", true},
	}
	for _, c := range cases {
		if got := ParseDomainPattern(c.pattern).Matches(CanonicalDomain(c.name)); got != c.want {
			t.Errorf("%q matches %q: %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	if got := CanonicalDomain("WWW.Example.COM."); got != "www.example.com" {
		t.Errorf("CanonicalDomain = %q", got)
	}
}
