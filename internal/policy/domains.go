package policy

import "strings"

// Domain names as peers (AdminNetworkPolicy v1alpha1 experimental v0.1.7,
// ClusterNetworkPolicy v1alpha2 v0.2.0, NPEP-133).
//
// What the API says, and what netpol makes of it:
//
//   - Where: only in egress peers ("to") of AdminNetworkPolicy and of
//     ClusterNetworkPolicy in either tier; BaselineAdminNetworkPolicy
//     v1alpha1 has no such field (strict decoding refuses it), nor does
//     any ingress peer.
//   - Action: "DomainNames is only supported for ALLOW rules" (ANP) and "for
//     Accept rules" (CNP), to build an allow-list above a lower-precedence
//     egress deny. The CRDs do not reject another action, so the API server
//     stores such a rule; netpol lets that peer match nothing (the rule's
//     other peers still match) and lint reports it as an error
//     (domain-names-not-allow).
//   - Syntax: the CRD pattern (validated as the API server does); at most
//     25 names per peer; not with named ports (the CRD's CEL rule).
//   - An exact name matches only itself: "kubernetes.io" matches neither
//     "www.kubernetes.io" nor "my-kubernetes.io".
//   - "*." matches one or more entire labels, only as a prefix:
//     "*.kubernetes.io" matches "www.kubernetes.io" and
//     "latest.blog.kubernetes.io", not "kubernetes.io".
//   - Case: DNS names compare case-insensitively (RFC 4343); both sides are
//     lowercased.
//   - A trailing dot (the fully qualified form) is the same name: both
//     sides drop it.
//   - The addresses a name stands for are those of the A and AAAA answers
//     to a query for it, at the end of any CNAME chain: the final addresses
//     count for the name that was queried, not for the aliases on the way.
//   - A connection matches when its destination address is one of those
//     addresses and its port one of the rule's ports. In the kernel the
//     addresses are learned from the answers the node's pods receive and
//     kept for the answer's TTL; in explain, a flow to an address carries
//     the names it was resolved as (--resolved-as), and a flow to a name
//     is a flow to some address outside the cluster that the name resolved
//     to.
//   - Names in the cluster's own domain (cluster.local) resolve to Service
//     cluster IPs, which policy never sees: it applies after the Service
//     translation, to the backends. Such a name matches only headless
//     Services, whose names resolve to pod addresses; lint says so
//     (domain-names-cluster-local).

// DomainPattern is one entry of a domainNames peer.
type DomainPattern struct {
	// Name is the name, lowercased, without its trailing dot and without
	// the "*." of a wildcard.
	Name string
	// Wildcard: the entry was "*.Name", matching names that end in
	// ".Name" (one or more labels before it).
	Wildcard bool
}

// ParseDomainPattern reads an entry that passed the CRD's pattern.
func ParseDomainPattern(s string) DomainPattern {
	s = CanonicalDomain(s)
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		return DomainPattern{Name: rest, Wildcard: true}
	}
	return DomainPattern{Name: s}
}

// CanonicalDomain is the form in which names are compared: lowercase,
// without the trailing dot of a fully qualified name.
func CanonicalDomain(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// Matches reports whether name (canonical: CanonicalDomain) is one the
// pattern names.
func (p DomainPattern) Matches(name string) bool {
	if !p.Wildcard {
		return name == p.Name
	}
	return len(name) > len(p.Name)+1 && strings.HasSuffix(name, p.Name) && name[len(name)-len(p.Name)-1] == '.'
}

func (p DomainPattern) String() string {
	if p.Wildcard {
		return "*." + p.Name
	}
	return p.Name
}

// DomainsMatch reports whether the rule's domainNames peers can match: only
// in Allow rules (the ANP's Allow, the CNP's Accept), as the API says.
func (r *Rule) DomainsMatch() bool { return r.Action == Allow }

// JoinDomains writes patterns as written, separated by sep.
func JoinDomains(patterns []DomainPattern, sep string) string {
	names := make([]string, len(patterns))
	for i, p := range patterns {
		names[i] = p.String()
	}
	return strings.Join(names, sep)
}
