package engine

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// PodEndpoint is pod at its address of the family of like (IPv4 by default).
func (e *Engine) PodEndpoint(p *state.Pod, like netip.Addr) Endpoint {
	ep := Endpoint{Pod: p}
	var ok bool
	if ep.IP, ok = p.IP(like); !ok && !like.IsValid() && len(p.IPs) > 0 {
		ep.IP = p.IPs[0] // no family asked for: an IPv6-only pod's address
	}
	if p.HostNetwork {
		ep.Node = e.c.Node(p.Node)
	}
	return ep
}

// Endpoint parses what a user names as one end of a flow: "namespace/pod",
// "node/NAME", or an IP address (which is looked up among pods and nodes).
func (e *Engine) Endpoint(s string) (Endpoint, error) {
	s = strings.TrimSpace(s)
	if ip, err := netip.ParseAddr(s); err == nil {
		ip = ip.Unmap()
		ep := Endpoint{IP: ip, Pod: e.c.PodByIP(ip), Node: e.c.NodeByIP(ip), ByAddress: true}
		return ep, nil
	}
	kind, name, ok := strings.Cut(s, "/")
	if !ok {
		if IsDomainName(s) {
			return e.NameEndpoint(s, netip.Addr{}), nil
		}
		return Endpoint{}, fmt.Errorf("%q: want namespace/pod, node/NAME, an IP address or a DNS name", s)
	}
	if kind == "node" && e.c.Namespace("node") == nil {
		n := e.c.Node(name)
		if n == nil || len(n.IPs) == 0 {
			return Endpoint{}, fmt.Errorf("%q: no such node%s", s, suggest(name, e.nodeNames()))
		}
		return Endpoint{IP: n.IPs[0], Node: n}, nil
	}
	p := e.c.Pod(s)
	if p == nil {
		return Endpoint{}, fmt.Errorf("%q: no such pod%s", s, suggest(s, e.podKeys(kind)))
	}
	ep := e.PodEndpoint(p, netip.Addr{})
	if !ep.IP.IsValid() {
		return Endpoint{}, fmt.Errorf("%q: the pod has no address", s)
	}
	return ep, nil
}

// NewFlow builds the flow src -> dst on port, resolving a named port against
// the destination pod and matching the source's address family to the
// destination's.
func (e *Engine) NewFlow(src, dst Endpoint, port l4.PortSpec) (Flow, error) {
	f := Flow{Src: src, Dst: dst}
	if src.Pod != nil && !src.ByAddress && src.IP.Is4() != dst.IP.Is4() {
		if ip, ok := src.Pod.IP(dst.IP); ok {
			f.Src.IP = ip
		}
	}
	if dst.Pod != nil && !dst.ByAddress && dst.IP.Is4() != f.Src.IP.Is4() {
		if ip, ok := dst.Pod.IP(f.Src.IP); ok {
			f.Dst.IP = ip
		}
	}
	if f.Src.IP.Is4() != f.Dst.IP.Is4() {
		return f, fmt.Errorf("%s (%s) and %s (%s) have no address family in common", src, src.IP, dst, dst.IP)
	}
	if port.Name == "" {
		f.Port = l4.Port{Proto: port.Proto, Num: port.Num}
		if f.Port.Proto == 0 {
			f.Port.Proto = l4.TCP
		}
		return f, nil
	}
	if dst.Pod == nil {
		return f, fmt.Errorf("named port %q needs a destination pod to resolve it", port.Name)
	}
	p, ok := dst.Pod.NamedPort(port.Name, port.Proto)
	if !ok {
		var names []string
		for _, cp := range dst.Pod.Ports {
			if cp.Name != "" {
				names = append(names, cp.String())
			}
		}
		return f, fmt.Errorf("pod %s declares no container port named %q (it has: %s)", dst.Pod.Key(), port.Name, orNone(names))
	}
	f.Port = p
	return f, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func (e *Engine) nodeNames() []string {
	var out []string
	for _, n := range e.c.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// podKeys lists the pods of namespace ns, or every pod when ns is unknown.
func (e *Engine) podKeys(ns string) []string {
	var out []string
	if n := e.c.Namespace(ns); n != nil {
		for _, p := range e.c.PodsIn(n) {
			out = append(out, p.Key())
		}
		return out
	}
	for _, p := range e.c.Pods {
		out = append(out, p.Key())
	}
	return out
}

// suggest names the closest candidates, so a typo costs one glance.
func suggest(s string, candidates []string) string {
	var close []string
	for _, c := range candidates {
		if strings.Contains(c, s) || strings.Contains(s, c) || distance(s, c) <= 2 {
			close = append(close, c)
		}
		if len(close) == 5 {
			break
		}
	}
	if len(close) == 0 {
		return ""
	}
	return " (did you mean " + strings.Join(close, ", ") + "?)"
}

// distance is the Levenshtein distance.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// hostnameRE is a DNS name of two labels or more (RFC 1123 labels, and "_"
// as the network-policy-api's DomainName pattern allows), with an optional
// trailing dot.
var hostnameRE = regexp.MustCompile(`^([a-zA-Z0-9_]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.)+[a-zA-Z0-9_]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.?$`)

// IsDomainName reports whether s reads as a DNS name (not an address).
func IsDomainName(s string) bool {
	_, err := netip.ParseAddr(s)
	return err != nil && len(s) <= 253 && hostnameRE.MatchString(s)
}

// ResolvedAs is ep as the address that names resolved to, which
// domainNames peers match by those names (explain --resolved-as).
func (ep Endpoint) ResolvedAs(names []string) (Endpoint, error) {
	for _, n := range names {
		if !IsDomainName(n) {
			return ep, fmt.Errorf("%q is not a DNS name", n)
		}
		ep.Names = append(slices.Clip(ep.Names), policy.CanonicalDomain(n))
	}
	return ep, nil
}

// stand-ins are the addresses a flow to a name may take (documentation
// ranges, RFC 5737 and RFC 3849), in order of preference.
var standIns4, standIns6 = []netip.Prefix{
	netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("192.0.2.0/24"),
}, []netip.Prefix{netip.MustParsePrefix("2001:db8::/32")}

// NameEndpoint is a destination named by DNS name: an address outside the
// cluster that the name resolved to. Which address is not known, so it is
// one that no ipBlock or networks peer names except those covering every
// address (0.0.0.0/0, ::/0), and that no pod, node or Service has: the
// verdict that every such address gets. like chooses the family (IPv4 by
// default). An address that a narrower peer names may be decided
// otherwise: give it with --resolved-as.
func (e *Engine) NameEndpoint(name string, like netip.Addr) Endpoint {
	ep := Endpoint{Names: []string{policy.CanonicalDomain(name)}, ByAddress: true}
	var named []netip.Prefix
	for _, p := range e.Policies().Policies() {
		for _, d := range policy.Directions {
			for _, r := range p.Rules[d] {
				for _, peer := range r.Peers {
					if peer.Kind == policy.PeerIPBlock && peer.Block.CIDR.Bits() > 0 {
						named = append(named, peer.Block.CIDR)
					}
				}
			}
		}
	}
	taken := func(a netip.Addr) bool {
		if e.c.PodByIP(a) != nil || e.c.NodeByIP(a) != nil || e.c.ServiceByIP(a) != nil {
			return true
		}
		for _, p := range named {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	ranges := standIns4
	if like.Is6() {
		ranges = standIns6
	}
	for _, r := range ranges {
		for a, n := r.Addr().Next(), 0; r.Contains(a) && n < 256; a, n = a.Next(), n+1 {
			if !taken(a) {
				ep.IP = a
				return ep
			}
		}
	}
	ep.IP = ranges[0].Addr().Next() // every stand-in is named: take the first
	return ep
}
