package engine

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/netpol/netpol/internal/l4"
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
		return Endpoint{}, fmt.Errorf("%q: want namespace/pod, node/NAME or an IP address", s)
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
