package engine

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"sync/atomic"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Sides is the class view of a matrix for clusters where class x class no
// longer fits (at 100k pods, 37,746 classes make 1.4e9 pairs). It says
// what the kernel is told: each side of each class is a list of steps, a
// step is an answer's rules in order, and a rule's peers are a set of
// classes. A connection from class c to class d on a port is allowed when
// c's egress steps allow d on it and d's ingress steps allow c on it
// (Decide's rule: both sides must allow). In a step, the first rule whose
// ports hold the port and whose set holds the peer decides by its
// outcome, and no rule leaves the step's rest; the first step that does not
// answer Next decides, and after the last the default allows. The first
// step is the connection's own (no address family in common denies; a
// host-network peer on the subject's node is accepted by ingress), then one
// per tier of the walk that has something to say.
//
// Sets, rules and answers are each worked out once and kept once: a rule's
// set once per rule (and fact of the subject it reads), an admin tier's
// answer once for every class its policies select alike. The size follows
// the policies and what their peers select, not the pairs of classes.
//
// A class of one pod towards itself is that pod towards itself, which is
// always allowed whatever the answers say (ClassMatrix.Paired).
type Sides struct {
	*ClassMatrix
	// Sets are sets of classes, as ascending runs.
	Sets    [][]ClassRun
	Answers []Answer
	// Egress[c] and Ingress[c] are class c's steps: indexes in Answers.
	Egress, Ingress [][]int32
}

// ClassRun is the classes First..Last.
type ClassRun struct{ First, Last int32 }

// Answer is one step of a side towards every class: its rules in order,
// and Rest, what it does with what none of them matches.
type Answer struct {
	Tier  string // the tier of the walk, or ConnectionStep
	Rules []AnswerRule
	Rest  Outcome
}

// AnswerRule is a rule of a step as it applies to one subject.
type AnswerRule struct {
	Outcome Outcome
	Ports   []uint64 // bit k%64 of word k/64: ClassMatrix.Ports[k]
	Set     int32    // the classes it matches, in Sides.Sets
	// Policy and Rule name the policy's rule (Rule is its label); the
	// connection's own rules have no Policy, and Rule says what they are.
	Policy *policy.Ref
	Rule   string
}

// ConnectionStep is the Tier of the connection's own step.
const ConnectionStep = "Connection"

// The connection's own rules.
const (
	ruleNoFamily = "no address family in common"
	ruleOwnNode  = "traffic from the pod's own node is always allowed"
)

// outcome is answer a towards class d on port k.
func (s *Sides) outcome(a, d, k int) Outcome {
	ans := &s.Answers[a]
	for _, r := range ans.Rules {
		if r.Ports[k/64]&(1<<(k%64)) != 0 && s.in(int(r.Set), d) {
			return r.Outcome
		}
	}
	return ans.Rest
}

// in reports whether set holds class d.
func (s *Sides) in(set, d int) bool {
	_, found := slices.BinarySearchFunc(s.Sets[set], int32(d), func(r ClassRun, d int32) int {
		switch {
		case r.Last < d:
			return -1
		case r.First > d:
			return 1
		}
		return 0
	})
	return found
}

// Allowed decides class c towards class d on port k from the steps.
func (s *Sides) Allowed(c, d, k int) bool {
	return s.walk(s.Egress[c], d, k) && s.walk(s.Ingress[d], c, k)
}

func (s *Sides) walk(steps []int32, peer, k int) bool {
	for _, a := range steps {
		switch s.outcome(int(a), peer, k) {
		case Accept:
			return true
		case Deny:
			return false
		}
	}
	return true
}

// Sides classes pods and works out both sides of every class on every
// port. ports must be the first ports of segments that no policy and no
// container port cuts (diff.Segments): each then decides its segment, and
// a named port, which resolves to one container port, is a segment of its
// own. done, when not nil, counts the sides worked out (two per class),
// for a progress line.
func (e *Engine) Sides(pods []*state.Pod, ports []l4.Port, done *atomic.Int64) *Sides {
	e.finish() // the lists that steps are keyed by, the atoms' members
	s := &Sides{ClassMatrix: e.ClassMatrix(pods, ports)}
	b := newSidesBuilder(e, s)
	for _, dir := range policy.Directions {
		of := make([][]int32, len(b.reps))
		for c, r := range b.reps {
			subject := r[0]
			var steps []int32
			add := func(a int32) {
				if a >= 0 {
					steps = append(steps, a)
				}
			}
			add(b.connection(dir, subject))
			if !subject.HostNetwork { // host-network pods are not selected by policies
				lists := e.applicable(subject)
				for i := range tiers {
					add(b.tier(dir, i, lists, subject))
				}
			}
			of[c] = steps
			if done != nil {
				done.Add(1)
			}
		}
		if dir == policy.Egress {
			s.Egress = of
		} else {
			s.Ingress = of
		}
	}
	return s
}

// sidesBuilder works out sets, rules and answers, each once.
type sidesBuilder struct {
	e     *Engine
	s     *Sides
	reps  [][2]*state.Pod
	width int // words of a port set
	// What classes are, worked out once.
	classOfPod   []int32   // by pod ID; -1 for pods outside the view
	atomClasses  [][]int32 // by pod atom: the classes of its members, lazily
	blockClasses map[string]*[2][]int32
	has4         []bool
	without      [4][]int32 // by subject family (familyOf): the classes it shares none with
	hostClasses  []int32    // classes of host-network pods
	segment      map[l4.Port]int
	named        map[namedKey]bool
	// What is kept once.
	sets     map[string]int32 // a set's encoding -> its index
	atomSets map[string]int32 // pod atoms, as peers of a rule -> their set
	rules    map[ruleKey][]AnswerRule
	steps    map[stepKey]int32 // -> answer, -1 for a step with nothing to say
	answers  map[string]int32  // an answer's encoding -> its index
	// Scratch for a set being made.
	mark  []uint32
	epoch uint32
	buf   []int32
}

type namedKey struct {
	list *tierList
	dir  policy.Direction
}

// ruleKey is a rule and what it reads of its subject.
type ruleKey struct {
	rule  *policy.Rule
	facts string
}

// stepKey is what one step of the walk reads: the side, the tier (-1: the
// connection's step), the list of the tier's policies that select the
// subject (shared by every pod with the same policies, so its identity
// names it) and the facts of the subject that peers, ports and the tier's
// isolation are matched against. Subjects with equal keys have equal
// answers.
type stepKey struct {
	dir   policy.Direction
	tier  int
	list  *tierList
	facts string
}

func newSidesBuilder(e *Engine, s *Sides) *sidesBuilder {
	cm := s.ClassMatrix
	n := len(cm.reps)
	b := &sidesBuilder{e: e, s: s, reps: cm.reps, width: (len(cm.Ports) + 63) / 64,
		classOfPod: make([]int32, len(e.c.Pods)), atomClasses: make([][]int32, len(e.ix.podAtoms)),
		blockClasses: map[string]*[2][]int32{}, has4: make([]bool, n), segment: map[l4.Port]int{},
		named: map[namedKey]bool{}, sets: map[string]int32{}, atomSets: map[string]int32{}, rules: map[ruleKey][]AnswerRule{},
		steps: map[stepKey]int32{}, answers: map[string]int32{}, mark: make([]uint32, n)}
	for i := range b.classOfPod {
		b.classOfPod[i] = -1
	}
	for i, p := range cm.Pods {
		if int(p.ID) < len(b.classOfPod) && e.c.Pods[p.ID] == p {
			b.classOfPod[p.ID] = int32(cm.Class[i])
		}
	}
	for k, p := range cm.Ports {
		b.segment[p] = k
	}
	for c, r := range cm.reps {
		f := familyOf(r[0])
		b.has4[c] = f&1 != 0
		for sf := range b.without {
			if sf&f == 0 {
				b.without[sf] = append(b.without[sf], int32(c))
			}
		}
		if r[0].HostNetwork {
			b.hostClasses = append(b.hostClasses, int32(c))
		}
	}
	return b
}

// familyOf is bit 1 for an IPv4 address, bit 2 for an IPv6 one.
func familyOf(p *state.Pod) int {
	f := 0
	if _, ok := p.IP(netip.IPv4Unspecified()); ok {
		f |= 1
	}
	if _, ok := p.IP(netip.IPv6Unspecified()); ok {
		f |= 2
	}
	return f
}

// step returns the answer of key, walking it the first time; -1 when it
// has nothing to say.
func (b *sidesBuilder) step(key stepKey, walk func() Answer) int32 {
	if a, ok := b.steps[key]; ok {
		return a
	}
	ans := walk()
	a := int32(-1)
	if len(ans.Rules) > 0 || ans.Rest != Next {
		enc := string(ans.encode())
		var ok bool
		if a, ok = b.answers[enc]; !ok {
			a = int32(len(b.s.Answers))
			b.answers[enc] = a
			b.s.Answers = append(b.s.Answers, ans)
		}
	}
	b.steps[key] = a
	return a
}

// connection is the step before the tiers: no address family in common
// (PodFlow) denies, and ingress accepts traffic from the pod's own node
// (walk).
func (b *sidesBuilder) connection(dir policy.Direction, subject *state.Pod) int32 {
	f := familyOf(subject)
	ownNode := dir == policy.Ingress && len(b.hostClasses) > 0 && !subject.HostNetwork && subject.Node != ""
	facts := []byte{byte(f)}
	if ownNode {
		facts = append(facts, subject.Node...)
	}
	return b.step(stepKey{dir: dir, tier: -1, facts: string(facts)}, func() Answer {
		a := Answer{Tier: ConnectionStep, Rest: Next}
		all := b.allPorts()
		if set := b.set(b.without[f]); set >= 0 {
			a.Rules = append(a.Rules, AnswerRule{Outcome: Deny, Ports: all, Set: set, Rule: ruleNoFamily})
		}
		if ownNode {
			var local []int32
			for _, c := range b.hostClasses {
				if n := b.e.c.Node(b.reps[c][0].Node); n != nil && n.Name == subject.Node {
					local = append(local, c)
				}
			}
			if set := b.set(local); set >= 0 {
				a.Rules = append(a.Rules, AnswerRule{Outcome: Accept, Ports: all, Set: set, Rule: ruleOwnNode})
			}
		}
		return a
	})
}

// tier is tier i of subject's dir side as a step (walk, matcher.decide):
// the rules of the policies that count, in order, and the tier's rest.
func (b *sidesBuilder) tier(dir policy.Direction, i int, lists podTiers, subject *state.Pod) int32 {
	facts := []byte{byte(familyOf(subject))} // which address a peer is matched by
	switch {
	case b.e.relative:
		facts = append(facts, subject.Namespace.Name...) // relative peers
	case dir == policy.Ingress && b.e.opts.LegacyNamespaceIsolation:
		facts = append(facts, boolByte(subject.Namespace.LegacyIngressIsolation))
	}
	if dir == policy.Ingress && b.hasNamed(lists[i], dir) {
		facts = append(facts, namedPortsOf(subject)...)
	}
	return b.step(stepKey{dir: dir, tier: i, list: lists[i], facts: string(facts)}, func() Answer {
		st := b.e.stage(i, lists, subject, dir)
		a := Answer{Tier: st.tier.String(), Rest: st.rest}
		for _, p := range st.policies {
			if !st.counts(p) {
				continue
			}
			for _, r := range p.rules[dir] {
				a.Rules = append(a.Rules, b.rule(dir, subject, p, r)...)
			}
		}
		return a
	})
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// namedPortsOf spells pod's named ports, for a key.
func namedPortsOf(pod *state.Pod) string {
	var out []byte
	for _, cp := range pod.Ports {
		if cp.Name != "" {
			out = append(out, 0)
			out = append(out, cp.String()...)
		}
	}
	return string(out)
}

// hasNamed reports whether a rule of list's policies in dir has a named
// port.
func (b *sidesBuilder) hasNamed(list *tierList, dir policy.Direction) bool {
	k := namedKey{list, dir}
	if v, ok := b.named[k]; ok {
		return v
	}
	v := false
	for _, p := range list.policies {
		for _, r := range p.rules[dir] {
			v = v || hasNamed(r)
		}
	}
	b.named[k] = v
	return v
}

// rule is r as it applies to subject (matcher.rule): the classes its
// peers match, on the ports it matches. A named port resolves against the
// destination: for ingress the subject; for egress each class, so that
// the rule becomes one per distinct resolution.
func (b *sidesBuilder) rule(dir policy.Direction, subject *state.Pod, p *compiled, r compiledRule) []AnswerRule {
	named := hasNamed(r)
	facts := []byte{byte(familyOf(subject))}
	if b.e.relative {
		facts = append(facts, subject.Namespace.Name...)
	}
	if named && dir == policy.Ingress {
		facts = append(facts, namedPortsOf(subject)...)
	}
	key := ruleKey{rule: r.Rule, facts: string(facts)}
	if out, ok := b.rules[key]; ok {
		return out
	}
	ref := p.Ref
	one := func(ports []uint64, classes []int32) AnswerRule {
		return AnswerRule{Outcome: outcomeOf(r.Action), Ports: ports, Set: b.set(classes), Policy: &ref, Rule: r.Label()}
	}
	static := b.staticPorts(r)
	var out []AnswerRule
	switch {
	case !named || dir == policy.Ingress:
		if named {
			b.namedPorts(static, r, subject)
		}
		if zero(static) {
			break
		}
		if set := b.peerSet(r, subject); set >= 0 {
			out = append(out, AnswerRule{Outcome: outcomeOf(r.Action), Ports: static, Set: set, Policy: &ref, Rule: r.Label()})
		}
	default:
		// Egress: group the classes by the ports r resolves to on them.
		var classes []int32
		if r.AllPeers {
			classes = b.allClasses()
		} else {
			classes = b.peerClasses(r, subject)
		}
		groups := map[string][]int32{}
		var order []string
		ports := make([]uint64, b.width)
		for _, c := range classes {
			copy(ports, static)
			b.namedPorts(ports, r, b.reps[c][0])
			var kb []byte
			for _, x := range ports {
				kb = binary.LittleEndian.AppendUint64(kb, x)
			}
			k := string(kb)
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], c)
		}
		for _, k := range order {
			ports := make([]uint64, b.width)
			for w := range ports {
				ports[w] = binary.LittleEndian.Uint64([]byte(k)[8*w:])
			}
			if !zero(ports) {
				out = append(out, one(ports, groups[k]))
			}
		}
	}
	b.rules[key] = out
	return out
}

func zero(ports []uint64) bool {
	return !slices.ContainsFunc(ports, func(x uint64) bool { return x != 0 })
}

func (b *sidesBuilder) allPorts() []uint64 {
	ports := make([]uint64, b.width)
	for k := range b.s.Ports {
		ports[k/64] |= 1 << (k % 64)
	}
	return ports
}

func (b *sidesBuilder) allClasses() []int32 {
	all := make([]int32, len(b.reps))
	for c := range all {
		all[c] = int32(c)
	}
	return all
}

// peerSet is the set of the classes r's peers match, seen from subject;
// -1 for none. Rules of many policies name the same selectors (every
// namespace labelled env=prod), so a set of pod peers that no subject
// changes is made once per list of selectors, not once per rule.
func (b *sidesBuilder) peerSet(r compiledRule, subject *state.Pod) int32 {
	if r.AllPeers {
		return b.set(b.allClasses())
	}
	var key []byte
	for _, p := range r.peers {
		if p.Kind != policy.PeerPods || p.Pods.Namespaces.Relative() {
			key = nil
			break
		}
		key = binary.AppendUvarint(key, uint64(p.atom))
	}
	if key == nil {
		return b.set(b.peerClasses(r, subject))
	}
	if set, ok := b.atomSets[string(key)]; ok {
		return set
	}
	set := b.set(b.peerClasses(r, subject))
	b.atomSets[string(key)] = set
	return set
}

// peerClasses is the classes some peer of r matches, seen from subject,
// each once.
func (b *sidesBuilder) peerClasses(r compiledRule, subject *state.Pod) []int32 {
	b.epoch++
	out := []int32{}
	for _, p := range r.peers {
		b.eachPeerClass(p, subject, func(c int32) {
			if b.mark[c] != b.epoch {
				b.mark[c] = b.epoch
				out = append(out, c)
			}
		})
	}
	return out
}

// set returns the index of the set of classes (in any order), kept once;
// -1 for no class.
func (b *sidesBuilder) set(classes []int32) int32 {
	if len(classes) == 0 {
		return -1
	}
	sorted := append(b.buf[:0], classes...)
	slices.Sort(sorted)
	b.buf = sorted
	var runs []ClassRun
	for _, c := range sorted {
		if l := len(runs) - 1; l >= 0 && runs[l].Last >= c-1 {
			runs[l].Last = max(runs[l].Last, c)
			continue
		}
		runs = append(runs, ClassRun{c, c})
	}
	var enc []byte
	for _, r := range runs {
		enc = binary.AppendUvarint(enc, uint64(r.First))
		enc = binary.AppendUvarint(enc, uint64(r.Last))
	}
	if i, ok := b.sets[string(enc)]; ok {
		return i
	}
	i := int32(len(b.s.Sets))
	b.sets[string(enc)] = i
	b.s.Sets = append(b.s.Sets, runs)
	return i
}

// eachPeerClass calls f with every class that peer p matches, seen from
// subject (matcher.peerMatches).
func (b *sidesBuilder) eachPeerClass(p compiledPeer, subject *state.Pod, f func(c int32)) {
	switch p.Kind {
	case policy.PeerPods:
		ns := p.Pods.Namespaces
		for _, c := range b.classesOfAtom(p.atom) {
			pod := b.reps[c][0]
			if ns.Relative() && !ns.Matches(pod.Namespace.Name, pod.Namespace.Labels, subject.Namespace.Name, subject.Namespace.Labels) {
				continue
			}
			f(c)
		}
	case policy.PeerIPBlock:
		// The address of the peer is that of the family the flow takes:
		// IPv4 when both ends have it, else IPv6.
		in := b.classesInBlock(p.Block)
		sf := familyOf(subject)
		if sf&1 != 0 {
			for _, c := range in[0] {
				f(c)
			}
		}
		if sf&2 != 0 {
			for _, c := range in[1] {
				if sf&1 == 0 || !b.has4[c] {
					f(c)
				}
			}
		}
	case policy.PeerNodes:
		for _, c := range b.hostClasses {
			if n := b.e.c.Node(b.reps[c][0].Node); n != nil && p.Nodes.Matches(n.Labels) {
				f(c)
			}
		}
	}
	// PeerDomains name no pod.
}

// classesOfAtom is the classes of pod atom a's members, ascending.
func (b *sidesBuilder) classesOfAtom(a int32) []int32 {
	if cs := b.atomClasses[a]; cs != nil {
		return cs
	}
	cs := []int32{}
	for _, id := range b.e.members(a) {
		if c := b.classOfPod[id]; c >= 0 {
			cs = append(cs, c)
		}
	}
	slices.Sort(cs)
	cs = slices.Compact(cs)
	b.atomClasses[a] = cs
	return cs
}

// classesInBlock is the classes whose IPv4 address ([0]) and whose IPv6
// address ([1]) are in blk: the address a flow takes of each family
// (PodEndpoint), which the class key holds alike for every member.
func (b *sidesBuilder) classesInBlock(blk policy.IPBlock) *[2][]int32 {
	key := blk.CIDR.String()
	for _, x := range blk.Except {
		key += " " + x.String()
	}
	if in, ok := b.blockClasses[key]; ok {
		return in
	}
	in := &[2][]int32{}
	for c, r := range b.reps {
		for fam, like := range [2]netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()} {
			if ip, ok := r[0].IP(like); ok && blk.Contains(ip) {
				in[fam] = append(in[fam], int32(c))
			}
		}
	}
	b.blockClasses[key] = in
	return in
}

// staticPorts is the ports that r's numbered ports match
// (matcher.portMatches).
func (b *sidesBuilder) staticPorts(r compiledRule) []uint64 {
	if r.AllPorts {
		return b.allPorts()
	}
	ports := make([]uint64, b.width)
	for k, port := range b.s.Ports {
		for _, pm := range r.Ports {
			if pm.Named == "" && pm.Range.Contains(port) {
				ports[k/64] |= 1 << (k % 64)
				break
			}
		}
	}
	return ports
}

// namedPorts adds to ports those that r's named ports resolve to on dst
// (matcher.portMatches): a host-network pod resolves none.
func (b *sidesBuilder) namedPorts(ports []uint64, r compiledRule, dst *state.Pod) {
	if dst.HostNetwork {
		return
	}
	for _, pm := range r.Ports {
		if pm.Named == "" {
			continue
		}
		for _, proto := range l4.Protocols {
			if pm.NamedProto != 0 && pm.NamedProto != proto {
				continue
			}
			if p, ok := dst.NamedPort(pm.Named, proto); ok {
				if k, ok := b.segment[p]; ok {
					ports[k/64] |= 1 << (k % 64)
				}
			}
		}
	}
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

// encode is the answer as bytes, equal for equal answers.
func (a *Answer) encode() []byte {
	b := append([]byte(a.Tier), 0, byte(a.Rest))
	for _, r := range a.Rules {
		b = append(b, byte(r.Outcome))
		for _, x := range r.Ports {
			b = binary.AppendUvarint(b, x)
		}
		b = binary.AppendUvarint(b, uint64(r.Set))
		if r.Policy != nil {
			b = append(b, r.Policy.String()...)
		}
		b = append(b, 0)
		b = append(b, r.Rule...)
		b = append(b, 0)
	}
	return b
}
