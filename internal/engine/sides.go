package engine

import (
	"encoding/binary"
	"net/netip"
	"slices"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Sides is the class view of a matrix factored by side, for clusters where
// class x class no longer fits: a connection from class c to class d on a
// port is allowed when c's egress answer allows d on it and d's ingress
// answer allows c on it (Decide's rule: both sides must allow). An answer
// is walked once per distinct subject (its policies and the facts of it
// that the walk reads), towards every class at once, and answers that come
// out alike are kept once. Its size follows the classes and the answers,
// not their product: at 100k pods, 37,746 classes make 1.4e9 pairs.
//
// A class of one pod towards itself is that pod towards itself, which is
// always allowed whatever the answers say (ClassMatrix.Paired).
type Sides struct {
	*ClassMatrix
	// Egress and Ingress are the distinct answers; EgressOf[c] and
	// IngressOf[c] index the answers of class c's two sides.
	Egress, Ingress     []Answer
	EgressOf, IngressOf []int
}

// Answer is one side's verdicts towards every class: groups of classes
// allowed alike, each with the ports allowed. A class in no group is
// allowed nothing.
type Answer []AnswerGroup

// AnswerGroup is classes, as ascending runs, allowed the same ports.
type AnswerGroup struct {
	Ports   []uint64 // bit k%64 of word k/64: ClassMatrix.Ports[k]
	Classes []ClassRun
}

// ClassRun is the classes First..Last.
type ClassRun struct{ First, Last int32 }

// Allows reports whether the answer allows class d on port k.
func (a Answer) Allows(d, k int) bool {
	for _, g := range a {
		if g.Ports[k/64]&(1<<(k%64)) == 0 {
			continue
		}
		if _, found := slices.BinarySearchFunc(g.Classes, int32(d), func(r ClassRun, d int32) int {
			switch {
			case r.Last < d:
				return -1
			case r.First > d:
				return 1
			}
			return 0
		}); found {
			return true
		}
	}
	return false
}

// Sides classes pods and answers both sides of every class on every port.
// ports must be the first ports of segments that no policy and no
// container port cuts (diff.Segments): each then decides its segment, and
// a named port, which resolves to one container port, is a segment of its
// own.
func (e *Engine) Sides(pods []*state.Pod, ports []l4.Port) *Sides {
	e.finish() // the lists that subjects are keyed by, the atoms' members
	s := &Sides{ClassMatrix: e.ClassMatrix(pods, ports)}
	w := newSideWalker(e, s.ClassMatrix)
	for _, dir := range policy.Directions {
		of, list := &s.EgressOf, &s.Egress
		if dir == policy.Ingress {
			of, list = &s.IngressOf, &s.Ingress
		}
		*of = make([]int, len(w.reps))
		subjects := map[subjectKey]int{} // -> answer
		answers := map[string]int{}      // an answer's encoding -> answer
		for c, r := range w.reps {
			key := w.subjectKey(dir, r[0])
			a, ok := subjects[key]
			if !ok {
				ans := w.answer(dir, r[0])
				enc := string(ans.encode())
				if a, ok = answers[enc]; !ok {
					a = len(*list)
					answers[enc] = a
					*list = append(*list, ans)
				}
				subjects[key] = a
			}
			(*of)[c] = a
		}
	}
	return s
}

// subjectKey is what the walk reads of a subject on one side: the lists
// of the policies that select it (shared by every pod with the same
// policies, so their identity names them) and the facts that peers and
// ports are matched against. Subjects with equal keys have equal answers.
type subjectKey struct {
	lists podTiers
	facts string
}

// sideWalker walks one side of a subject towards every class. A class that
// no peer of a rule names behaves as every other such class, so it keeps
// one state for all of those (def) and one per class that a peer named
// (touched), for one chunk of up to 64 ports at a time.
type sideWalker struct {
	e    *Engine
	reps [][2]*state.Pod
	// What classes are, worked out once.
	classOfPod   []int32   // by pod ID; -1 for pods outside the view
	atomClasses  [][]int32 // by pod atom: the classes of its members, lazily
	blockClasses map[string]*[2][]int32
	has4, has6   []bool
	without      [4][]int32 // by subject family (familyOf): classes it shares none with
	hostClasses  []int32    // classes of host-network pods
	segment      map[l4.Port]int
	ports        []l4.Port
	// The walk's state for one chunk: ports accepted, still open in the
	// tier, and left to the next tier.
	acc, open, next []uint64
	def             struct{ acc, open, next uint64 }
	touched         []int32
	seen            []uint32 // by class: the epoch that touched it
	epoch           uint32
}

func newSideWalker(e *Engine, cm *ClassMatrix) *sideWalker {
	n := len(cm.reps)
	w := &sideWalker{e: e, reps: cm.reps, ports: cm.Ports,
		classOfPod: make([]int32, len(e.c.Pods)), atomClasses: make([][]int32, len(e.ix.podAtoms)),
		blockClasses: map[string]*[2][]int32{}, has4: make([]bool, n), has6: make([]bool, n),
		segment: map[l4.Port]int{},
		acc:     make([]uint64, n), open: make([]uint64, n), next: make([]uint64, n), seen: make([]uint32, n)}
	for i := range w.classOfPod {
		w.classOfPod[i] = -1
	}
	for i, p := range cm.Pods {
		if int(p.ID) < len(w.classOfPod) && e.c.Pods[p.ID] == p {
			w.classOfPod[p.ID] = int32(cm.Class[i])
		}
	}
	for k, p := range cm.Ports {
		w.segment[p] = k
	}
	for c, r := range cm.reps {
		_, w.has4[c] = r[0].IP(netip.IPv4Unspecified())
		_, w.has6[c] = r[0].IP(netip.IPv6Unspecified())
		for f := range w.without {
			if !(f&1 != 0 && w.has4[c] || f&2 != 0 && w.has6[c]) {
				w.without[f] = append(w.without[f], int32(c))
			}
		}
		if r[0].HostNetwork {
			w.hostClasses = append(w.hostClasses, int32(c))
		}
	}
	return w
}

// familyOf is bit 1 for an IPv4 address, bit 2 for an IPv6 one.
func (w *sideWalker) familyOf(p *state.Pod) int {
	f := 0
	if _, ok := p.IP(netip.IPv4Unspecified()); ok {
		f |= 1
	}
	if _, ok := p.IP(netip.IPv6Unspecified()); ok {
		f |= 2
	}
	return f
}

func (w *sideWalker) subjectKey(dir policy.Direction, subject *state.Pod) subjectKey {
	if subject.HostNetwork {
		return subjectKey{facts: "host"} // not selected by policies: allowed
	}
	var b []byte
	b = append(b, byte(w.familyOf(subject))) // which address a peer is matched by
	if w.e.relative || (dir == policy.Ingress && w.e.opts.LegacyNamespaceIsolation) {
		b = append(b, subject.Namespace.Name...) // relative peers, the namespace's isolation
	}
	if dir == policy.Ingress {
		b = append(b, 0)
		if len(w.hostClasses) > 0 {
			b = append(b, subject.Node...) // traffic from the own node
		}
		for _, cp := range subject.Ports { // named ports resolve against the destination
			if cp.Name != "" {
				b = append(b, 0)
				b = append(b, cp.String()...)
			}
		}
	}
	return subjectKey{lists: w.e.applicable(subject), facts: string(b)}
}

// answer walks subject's dir side towards every class, as walk does
// towards one: tier by tier, per port the first rule that matches decides
// by its outcome, and what no tier decides the default allows.
func (w *sideWalker) answer(dir policy.Direction, subject *state.Pod) Answer {
	chunks := (len(w.ports) + 63) / 64
	allowed := map[int32][]uint64{} // touched classes, by chunk
	def := make([]uint64, chunks)
	for ch := range chunks {
		lo, hi := ch*64, min(ch*64+64, len(w.ports))
		want := uint64(1)<<(hi-lo) - 1 // every bit when 64 ports: the shift makes 0
		w.epoch++
		w.touched = w.touched[:0]
		w.def.acc, w.def.open, w.def.next = 0, want, 0
		if !subject.HostNetwork { // host-network pods are not selected by policies
			w.walkTiers(dir, subject, lo, hi)
			if dir == policy.Ingress && subject.Node != "" {
				for _, c := range w.hostClasses {
					if n := w.e.c.Node(w.reps[c][0].Node); n != nil && n.Name == subject.Node {
						w.touch(c) // traffic from the pod's own node
						w.acc[c], w.open[c] = want, 0
					}
				}
			}
		}
		// No address family in common: no connection (PodFlow).
		if f := w.familyOf(subject); f == 0 {
			w.def.acc, w.def.open = 0, 0
			for _, c := range w.touched {
				w.acc[c], w.open[c] = 0, 0
			}
		} else {
			for _, c := range w.without[f] {
				w.touch(c)
				w.acc[c], w.open[c] = 0, 0
			}
		}
		def[ch] = w.def.acc | w.def.open
		for _, c := range w.touched {
			if allowed[c] == nil {
				allowed[c] = make([]uint64, chunks)
				copy(allowed[c], def[:ch]) // untouched so far: the default's
			}
			allowed[c][ch] = w.acc[c] | w.open[c]
		}
		for c, a := range allowed {
			if w.seen[c] != w.epoch {
				a[ch] = def[ch]
			}
		}
	}
	return groupAnswer(len(w.reps), allowed, def)
}

// touch gives class c a state of its own, the default's so far.
func (w *sideWalker) touch(c int32) {
	if w.seen[c] == w.epoch {
		return
	}
	w.seen[c] = w.epoch
	w.acc[c], w.open[c], w.next[c] = w.def.acc, w.def.open, w.def.next
	w.touched = append(w.touched, c)
}

// walkTiers is the tier walk (walk, matcher.decide) for every class on the
// ports lo..hi.
func (w *sideWalker) walkTiers(dir policy.Direction, subject *state.Pod, lo, hi int) {
	lists := w.e.applicable(subject)
	for i := range tiers {
		st := w.e.stage(i, lists, subject, dir)
		for _, p := range st.policies {
			if !st.counts(p) {
				continue
			}
			for _, r := range p.rules[dir] {
				w.rule(dir, subject, r, lo, hi)
			}
		}
		// What no rule decided goes on to the next tier or is denied.
		end := func(open, next *uint64) {
			if st.rest == Next {
				*next |= *open
			}
			*open, *next = *next, 0
		}
		end(&w.def.open, &w.def.next)
		for _, c := range w.touched {
			end(&w.open[c], &w.next[c])
		}
	}
}

// rule decides, by r's outcome, the ports it matches of those still open,
// for the classes its peers match (matcher.rule). Deciding a class twice
// changes nothing: its matched ports are no longer open.
func (w *sideWalker) rule(dir policy.Direction, subject *state.Pod, r compiledRule, lo, hi int) {
	outcome := outcomeOf(r.Action)
	apply := func(acc, open, next *uint64, ports uint64) {
		hit := *open & ports
		switch outcome {
		case Accept:
			*acc |= hit
		case Next:
			*next |= hit
		}
		*open &^= hit
	}
	static := w.staticPorts(r, lo, hi)
	named := hasNamed(r)
	if named && dir == policy.Ingress {
		static |= w.namedPorts(r, subject, lo, hi) // against the destination: the subject
		named = false
	}
	// The ports of r towards class c as destination.
	towards := func(c int32) uint64 {
		if !named {
			return static
		}
		return static | w.namedPorts(r, w.reps[c][0], lo, hi)
	}
	if r.AllPeers {
		if named { // the ports differ by destination: every class is its own
			for c := range w.reps {
				w.touch(int32(c))
			}
		}
		apply(&w.def.acc, &w.def.open, &w.def.next, static)
		for _, c := range w.touched {
			apply(&w.acc[c], &w.open[c], &w.next[c], towards(c))
		}
		return
	}
	for _, p := range r.peers {
		w.eachPeerClass(p, subject, func(c int32) {
			w.touch(c)
			apply(&w.acc[c], &w.open[c], &w.next[c], towards(c))
		})
	}
}

// eachPeerClass calls f with every class that peer p matches, seen from
// subject (matcher.peerMatches).
func (w *sideWalker) eachPeerClass(p compiledPeer, subject *state.Pod, f func(c int32)) {
	switch p.Kind {
	case policy.PeerPods:
		ns := p.Pods.Namespaces
		for _, c := range w.classesOfAtom(p.atom) {
			pod := w.reps[c][0]
			if ns.Relative() && !ns.Matches(pod.Namespace.Name, pod.Namespace.Labels, subject.Namespace.Name, subject.Namespace.Labels) {
				continue
			}
			f(c)
		}
	case policy.PeerIPBlock:
		// The address of the peer is that of the family the flow takes:
		// IPv4 when both ends have it, else IPv6.
		in := w.classesInBlock(p.Block)
		sf := w.familyOf(subject)
		if sf&1 != 0 {
			for _, c := range in[0] {
				f(c)
			}
		}
		if sf&2 != 0 {
			for _, c := range in[1] {
				if sf&1 == 0 || !w.has4[c] {
					f(c)
				}
			}
		}
	case policy.PeerNodes:
		for _, c := range w.hostClasses {
			if n := w.e.c.Node(w.reps[c][0].Node); n != nil && p.Nodes.Matches(n.Labels) {
				f(c)
			}
		}
	}
	// PeerDomains name no pod.
}

// classesOfAtom is the classes of pod atom a's members, ascending.
func (w *sideWalker) classesOfAtom(a int32) []int32 {
	if cs := w.atomClasses[a]; cs != nil {
		return cs
	}
	cs := []int32{}
	for _, id := range w.e.members(a) {
		if c := w.classOfPod[id]; c >= 0 {
			cs = append(cs, c)
		}
	}
	slices.Sort(cs)
	cs = slices.Compact(cs)
	w.atomClasses[a] = cs
	return cs
}

// classesInBlock is the classes whose IPv4 address ([0]) and whose IPv6
// address ([1]) are in b: the address a flow takes of each family
// (PodEndpoint), which the class key holds alike for every member.
func (w *sideWalker) classesInBlock(b policy.IPBlock) *[2][]int32 {
	key := b.CIDR.String()
	for _, x := range b.Except {
		key += " " + x.String()
	}
	if in, ok := w.blockClasses[key]; ok {
		return in
	}
	in := &[2][]int32{}
	for c, r := range w.reps {
		for fam, like := range [2]netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()} {
			if ip, ok := r[0].IP(like); ok && b.Contains(ip) {
				in[fam] = append(in[fam], int32(c))
			}
		}
	}
	w.blockClasses[key] = in
	return in
}

// staticPorts is the ports of lo..hi that r's numbered ports match
// (matcher.portMatches).
func (w *sideWalker) staticPorts(r compiledRule, lo, hi int) uint64 {
	if r.AllPorts {
		return uint64(1)<<(hi-lo) - 1
	}
	var m uint64
	for k := lo; k < hi; k++ {
		for _, pm := range r.Ports {
			if pm.Named == "" && pm.Range.Contains(w.ports[k]) {
				m |= 1 << (k - lo)
				break
			}
		}
	}
	return m
}

// namedPorts is the ports of lo..hi that r's named ports resolve to on dst
// (matcher.portMatches): a host-network pod resolves none.
func (w *sideWalker) namedPorts(r compiledRule, dst *state.Pod, lo, hi int) uint64 {
	if dst.HostNetwork {
		return 0
	}
	var m uint64
	for _, pm := range r.Ports {
		if pm.Named == "" {
			continue
		}
		for _, proto := range l4.Protocols {
			if pm.NamedProto != 0 && pm.NamedProto != proto {
				continue
			}
			if p, ok := dst.NamedPort(pm.Named, proto); ok {
				if k, ok := w.segment[p]; ok && k >= lo && k < hi {
					m |= 1 << (k - lo)
				}
			}
		}
	}
	return m
}

func hasNamed(r compiledRule) bool {
	if r.AllPorts {
		return false
	}
	for _, pm := range r.Ports {
		if pm.Named != "" {
			return true
		}
	}
	return false
}

// groupAnswer groups n classes by the ports they are allowed: those in
// touched as they say, every other one def. It costs the touched classes,
// not n: the others are the gaps between them.
func groupAnswer(n int, touched map[int32][]uint64, def []uint64) Answer {
	order := make([]int32, 0, len(touched))
	for c := range touched {
		order = append(order, c)
	}
	slices.Sort(order)
	var a Answer
	index := map[string]int{}
	add := func(ports []uint64, first, last int32) {
		if !slices.ContainsFunc(ports, func(x uint64) bool { return x != 0 }) {
			return // nothing allowed: in no group
		}
		key := string(binary.LittleEndian.AppendUint64(nil, ports[0]))
		for _, x := range ports[1:] {
			key = string(binary.LittleEndian.AppendUint64([]byte(key), x))
		}
		g, ok := index[key]
		if !ok {
			g = len(a)
			index[key] = g
			a = append(a, AnswerGroup{Ports: ports})
		}
		runs := a[g].Classes
		if l := len(runs) - 1; l >= 0 && runs[l].Last == first-1 {
			runs[l].Last = last
		} else {
			runs = append(runs, ClassRun{first, last})
		}
		a[g].Classes = runs
	}
	next := int32(0)
	for _, c := range order {
		if c > next {
			add(def, next, c-1)
		}
		add(touched[c], c, c)
		next = c + 1
	}
	if int(next) < n {
		add(def, next, int32(n-1))
	}
	return a
}

// encode is the answer as bytes, equal for equal answers.
func (a Answer) encode() []byte {
	var b []byte
	for _, g := range a {
		b = binary.AppendUvarint(b, uint64(len(g.Ports)))
		for _, x := range g.Ports {
			b = binary.AppendUvarint(b, x)
		}
		b = binary.AppendUvarint(b, uint64(len(g.Classes)))
		for _, r := range g.Classes {
			b = binary.AppendUvarint(b, uint64(r.First))
			b = binary.AppendUvarint(b, uint64(r.Last))
		}
	}
	return b
}
