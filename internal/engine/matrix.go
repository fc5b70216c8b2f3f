package engine

import (
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// Matrix is the verdict for every source x destination x port.
type Matrix struct {
	Sources, Destinations []*state.Pod
	Ports                 []l4.Port
	// Classes counts the behaviour classes the pods fell into; the work done
	// was Classes² x ports decisions, not pods² x ports.
	SourceClasses, DestinationClasses int
	allowed                           []bool
}

// Allowed returns the verdict for Sources[s] -> Destinations[d] on Ports[p].
func (m *Matrix) Allowed(s, d, p int) bool {
	return m.allowed[(s*len(m.Destinations)+d)*len(m.Ports)+p]
}

// Matrix decides every pair of srcs x dsts on every port. Pods that no
// selector, IP block, named port or node tells apart form one class, and
// each pair of classes is decided once.
func (e *Engine) Matrix(srcs, dsts []*state.Pod, ports []l4.Port) *Matrix {
	m := &Matrix{Sources: srcs, Destinations: dsts, Ports: ports,
		allowed: make([]bool, len(srcs)*len(dsts)*len(ports))}
	withNodes := false
	for _, p := range srcs {
		withNodes = withNodes || p.HostNetwork
	}
	srcClass, srcReps := e.classes(srcs, withNodes)
	dstClass, dstReps := e.classes(dsts, withNodes)
	m.SourceClasses, m.DestinationClasses = len(srcReps), len(dstReps)

	decided := make([]bool, len(srcReps)*len(dstReps)*len(ports))
	for ci, sr := range srcReps {
		for cj, dr := range dstReps {
			base := (ci*len(dstReps) + cj) * len(ports)
			e.decideClasses(sr, dr, ports, decided[base:base+len(ports)])
		}
	}
	for i, s := range srcs {
		for j, d := range dsts {
			base := (i*len(dsts) + j) * len(ports)
			if s == d {
				for k := range ports {
					m.allowed[base+k] = true // a pod can always reach itself
				}
				continue
			}
			cbase := (srcClass[i]*len(dstReps) + dstClass[j]) * len(ports)
			copy(m.allowed[base:base+len(ports)], decided[cbase:cbase+len(ports)])
		}
	}
	return m
}

// PodFlow is the flow pod src -> pod dst on port as every front end that
// decides pod pairs builds it (matrix, lint, diff): over IPv4 when both
// have it, else over IPv6 when both have that (an IPv6-only pod reaches a
// dual-stack one). ok is false without a family in common: no connection.
func (e *Engine) PodFlow(src, dst *state.Pod, port l4.Port) (f Flow, ok bool) {
	for _, family := range [...]netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()} {
		f = Flow{Src: e.PodEndpoint(src, family), Dst: e.PodEndpoint(dst, family), Port: port}
		if f.Src.IP.IsValid() && f.Dst.IP.IsValid() {
			return f, true
		}
	}
	return f, false
}

// decideClasses decides the class of sr towards the class of dr on every
// port, into out, and reports whether the classes hold a pair of distinct
// pods. sr and dr are up to two members of each class.
func (e *Engine) decideClasses(sr, dr [2]*state.Pod, ports []l4.Port, out []bool) bool {
	// Two classes can share their first pod (sources and destinations are
	// classed separately); a pod talking to itself says nothing about the
	// rest of its class, so use another member.
	s, d := sr[0], dr[0]
	if s == d {
		switch {
		case dr[1] != nil:
			d = dr[1]
		case sr[1] != nil:
			s = sr[1]
		default:
			clear(out)
			return false // the only pair is the pod with itself
		}
	}
	f, ok := e.PodFlow(s, d, l4.Port{})
	if !ok {
		clear(out) // no address family in common: no connection
		return true
	}
	for lo := 0; lo < len(ports); lo += 64 {
		hi := min(lo+64, len(ports))
		allowed := e.allowedPorts(f, ports[lo:hi])
		for k := lo; k < hi; k++ {
			out[k] = allowed&(1<<(k-lo)) != 0
		}
	}
	return true
}

// Classes groups pods that every verdict treats alike, as a source and as a
// destination: class[i] is the class of pods[i], numbered from 0 in order of
// first appearance. Front ends that summarise many pods (graphs, diffs) decide
// one member per class instead of every pod.
func (e *Engine) Classes(pods []*state.Pod) []int {
	withNodes := false
	for _, p := range pods {
		withNodes = withNodes || p.HostNetwork
	}
	class, _ := e.classes(pods, withNodes)
	return class
}

// Representatives returns up to two members of each group, flattened (the
// pods to give Matrix), and pair, which names the representatives that
// decide group a towards group b. Groups are sets that decide alike, such as
// Classes; the second member decides a group towards itself, since a pod
// towards itself says nothing, so pair is not ok for a group of one towards
// itself.
func Representatives[T any](groups [][]T) (reps []T, pair func(a, b int) (src, dst int, ok bool)) {
	first := make([]int, len(groups))
	for g, m := range groups {
		first[g] = len(reps)
		reps = append(reps, m[:min(2, len(m))]...)
	}
	return reps, func(a, b int) (int, int, bool) {
		if a != b {
			return first[a], first[b], true
		}
		return first[a], first[a] + 1, len(groups[a]) > 1
	}
}

// classes assigns each pod a class and returns up to two members of each.
func (e *Engine) classes(pods []*state.Pod, withNodes bool) (class []int, reps [][2]*state.Pod) {
	class = make([]int, len(pods))
	ids := map[string]int{}
	var b strings.Builder
	for i, p := range pods {
		b.Reset()
		e.classKey(&b, p, withNodes)
		k := b.String()
		id, ok := ids[k]
		switch {
		case !ok:
			id = len(reps)
			ids[k] = id
			reps = append(reps, [2]*state.Pod{p})
		case reps[id][1] == nil:
			reps[id][1] = p
		}
		class[i] = id
	}
	return class, reps
}

// classKey writes everything about p that any verdict can depend on,
// except its identity (handled by the self-traffic rule).
func (e *Engine) classKey(b *strings.Builder, p *state.Pod, withNodes bool) {
	for _, a := range e.atomsOf(p.ID) {
		b.WriteString(strconv.Itoa(int(a)))
		b.WriteByte(',')
	}
	b.WriteByte('|')
	// Every address: a flow between pods may use either family (PodFlow).
	for _, ip := range p.IPs {
		b.WriteString(strconv.FormatBool(ip.Is4()))
		b.WriteByte(':')
		for i, blk := range e.blocks {
			if blk.Contains(ip) {
				b.WriteString(strconv.Itoa(i))
				b.WriteByte(',')
			}
		}
		b.WriteByte(';')
	}
	b.WriteByte('|')
	ports := make([]string, 0, len(p.Ports))
	for _, cp := range p.Ports {
		if cp.Name != "" {
			ports = append(ports, cp.String())
		}
	}
	sort.Strings(ports)
	b.WriteString(strings.Join(ports, ","))
	b.WriteByte('|')
	if p.HostNetwork || withNodes {
		b.WriteString(strconv.FormatBool(p.HostNetwork))
		b.WriteString(p.Node)
		if p.HostNetwork {
			for _, ip := range p.IPs {
				b.WriteString(ip.String()) // matched by ipBlocks and node peers
			}
		}
	}
	b.WriteByte('|')
	if e.relative || (e.opts.LegacyNamespaceIsolation && p.Namespace.LegacyIngressIsolation) {
		b.WriteString(p.Namespace.Name)
	}
}
