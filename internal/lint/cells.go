package lint

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Lint's questions are about the flows of a rule: from (or to) the classes
// its policy selects, to (or from) every class its peers match, on the
// ports it names. Asked pair of classes by pair of classes, a rule that
// matches every pod costs one question per class of the cluster, and the
// cluster's rules grow with it: lint was quadratic. But a question looks
// at few things of the peer: whether the rule's own selections hold it,
// which of a few admin-tier rules match it (an override is an admin rule
// deciding, a shadow or an overlap an earlier or an equal rule matching),
// its address families and, for egress, its ports (named ports resolve on
// the destination, and examples prefer its declared ports). Peer classes
// alike in all of that answer alike.
//
// So classes are grouped once into peer groups, by everything any
// admin-tier rule can see of a peer (its selections and networks, the
// families, ports and, where some selection is relative to the subject's
// namespace, the namespace): an admin-tier rule matches all of a group or
// none of it. A question then cuts the classes its rule's peers can match
// by group (a histogram, shared by every rule with the same peers), merges
// the groups that its admin-tier rules cannot tell apart (outcome classes),
// and asks once per pair of a subject group and an outcome class: a cell.
//
// The answers are the same as pair by pair: a cell's weight is the number
// of pod pairs of its class pairs, and its first pair is the first in
// lint's order (subject class, peer class, port), whose flow is the example
// lint reports. A class towards itself has cells of its own: they stand for
// pairs of two members (pair), and the second member's ports may differ
// from the first's.

// pos is a flow's place in the order lint looks for examples in: the
// direction (admin-priority-overlap looks at both), the subject class, the
// peer class and the port's index in space.ports.
type pos struct{ dir, sc, pc, port int }

func (a pos) compare(b pos) int {
	return cmp.Or(cmp.Compare(a.dir, b.dir), cmp.Compare(a.sc, b.sc), cmp.Compare(a.pc, b.pc), cmp.Compare(a.port, b.port))
}

func (a pos) before(b pos) bool { return a.compare(b) < 0 }

// cell is pairs of classes (subject class, peer class) that every check
// answers alike, on every port.
type cell struct {
	sc, pc int // the first pair, in lint's order
	weight int // pod pairs: a class towards itself counts ordered pairs of distinct members
	// sg, fam and oc name the subject group, the flows' family and the
	// outcome class, for memos; sg is -1 for a cell of one pair.
	sg, fam, oc int
}

// at is the position of the cell's first pair on the port of index port.
func (c cell) at(dir, port int) pos { return pos{dir: dir, sc: c.sc, pc: c.pc, port: port} }

// flow is the cell's first pair on no port yet, as pair and visit order
// picked it (dir: egress flows leave the subject, ingress flows enter it).
func (s *space) cellFlow(c cell, dir policy.Direction) (engine.Flow, bool) {
	a, b, _, ok := pair(s.classes[c.sc], s.classes[c.pc], c.sc == c.pc)
	if !ok {
		return engine.Flow{}, false
	}
	src, dst := a, b
	if dir == policy.Ingress {
		src, dst = b, a
	}
	return s.flow(src, dst, l4.Port{})
}

// The address families a class has; a flow between two pods takes IPv4
// when both have it, else IPv6 (engine.PodFlow).
const (
	hasIPv4 uint8 = 1 << iota
	hasIPv6
)

// flowFamily is the family of flows between classes with families a and b:
// 0 for IPv4, 1 for IPv6, -1 for none.
func flowFamily(a, b uint8) int {
	switch {
	case a&b&hasIPv4 != 0:
		return 0
	case a&b&hasIPv6 != 0:
		return 1
	}
	return -1
}

// peerSet is what a rule's peers can match for flows of one family: every
// class, or the union of sorted lists of classes (its selections, and the
// classes whose address of that family its IP blocks hold). A class of a
// list matches unless the selection is relative to the subject's
// namespace, which the groups then tell apart.
type peerSet struct {
	all   bool
	lists [][]int32
	key   string
}

func (m peerSet) has(c int) bool {
	if m.all {
		return true
	}
	for _, l := range m.lists {
		if _, ok := slices.BinarySearch(l, int32(c)); ok {
			return true
		}
	}
	return false
}

// peers returns what r's peers can match, for each family.
func (l *linter) peers(r *policy.Rule) [2]peerSet {
	if r.AllPeers {
		return [2]peerSet{{all: true, key: "all"}, {all: true, key: "all"}}
	}
	var out [2]peerSet
	for fam := range out {
		var key strings.Builder
		for k, peer := range r.Peers {
			switch peer.Kind {
			case policy.PeerPods:
				if sel, ok := l.e.PeerSelection(r, k); ok {
					out[fam].lists = append(out[fam].lists, l.space.selectionClasses(sel))
					key.WriteString("s" + strconv.Itoa(int(sel.ID)) + ",")
				}
			case policy.PeerIPBlock:
				out[fam].lists = append(out[fam].lists, l.space.blockClasses(peer.Block, fam))
				key.WriteString("b" + strconv.Itoa(fam) + peer.Block.String() + ",")
			}
		}
		out[fam].key = key.String()
	}
	return out
}

// selectionClasses are the classes of a selection's pods, sorted.
func (s *space) selectionClasses(sel engine.Selection) []int32 {
	if cs, ok := s.bySelection[sel.ID]; ok {
		return cs
	}
	cs := s.classesOf(sel.Pods)
	s.bySelection[sel.ID] = cs
	return cs
}

// classesOf lists the classes of pods, sorted, each once.
func (s *space) classesOf(pods []int32) []int32 {
	s.stamp++
	var cs []int32
	for _, p := range pods {
		if c := s.classOf[p]; c >= 0 && s.seen[c] != s.stamp {
			s.seen[c] = s.stamp
			cs = append(cs, int32(c))
		}
	}
	slices.Sort(cs)
	return cs
}

// blockClasses are the classes whose address of family fam the block
// holds: every member's, since addresses in and out of every block of the
// policies tell classes apart.
func (s *space) blockClasses(b policy.IPBlock, fam int) []int32 {
	k := blockKey{b.String(), fam}
	if cs, ok := s.byBlock[k]; ok {
		return cs
	}
	var cs []int32
	for c, members := range s.classes {
		if ip, ok := members[0].IP(familyAddr[fam]); ok && b.Contains(ip) {
			cs = append(cs, int32(c))
		}
	}
	s.byBlock[k] = cs
	return cs
}

type blockKey struct {
	block string
	fam   int
}

// histogram is a peer set cut by peer groups: for each group that holds
// classes of the set, their pods and their first two classes.
type histogram []groupPart

type groupPart struct {
	group  int32
	pods   int
	p1, p2 int32 // -1 when absent
}

func (g *groupPart) add(c int32, pods int) {
	g.pods += pods
	switch {
	case g.p1 < 0 || c < g.p1:
		g.p1, g.p2 = c, g.p1
	case g.p2 < 0 || c < g.p2:
		g.p2 = c
	}
}

// histogram cuts m by peer groups. Sets are shared by many rules (every
// rule that admits a namespace, every allow-all rule), so the work is done
// once per set: from the largest list's histogram, adding the classes of
// the other lists it lacks.
func (s *space) histogram(m peerSet) histogram {
	if m.all {
		return s.allGroups
	}
	if h, ok := s.histograms[m.key]; ok {
		return h
	}
	var h histogram
	switch len(m.lists) {
	case 0:
	case 1:
		h = s.histogramOf(m.lists[0])
	default:
		largest := 0
		for i, list := range m.lists {
			if len(list) > len(m.lists[largest]) {
				largest = i
			}
		}
		base := s.histogramOf(m.lists[largest])
		parts := make(map[int32]*groupPart, len(base))
		for i := range base {
			p := base[i]
			parts[p.group] = &p
		}
		s.stamp++
		for _, c := range m.lists[largest] {
			s.seen[c] = s.stamp
		}
		for i, list := range m.lists {
			if i == largest {
				continue
			}
			for _, c := range list {
				if s.seen[c] == s.stamp {
					continue
				}
				s.seen[c] = s.stamp
				g := s.groupOf[c]
				p := parts[g]
				if p == nil {
					p = &groupPart{group: g, p1: -1, p2: -1}
					parts[g] = p
				}
				p.add(c, len(s.classes[c]))
			}
		}
		for _, p := range parts {
			h = append(h, *p)
		}
		slices.SortFunc(h, func(a, b groupPart) int { return cmp.Compare(a.group, b.group) })
	}
	s.histograms[m.key] = h
	return h
}

// histogramOf cuts one sorted list of classes by peer groups.
func (s *space) histogramOf(list []int32) histogram {
	index := map[int32]int{}
	var h histogram
	for _, c := range list {
		g := s.groupOf[c]
		i, ok := index[g]
		if !ok {
			i = len(h)
			index[g] = i
			h = append(h, groupPart{group: g, p1: -1, p2: -1})
		}
		h[i].add(c, len(s.classes[c]))
	}
	slices.SortFunc(h, func(a, b groupPart) int { return cmp.Compare(a.group, b.group) })
	return h
}

// subjectGroup is subject classes that every check answers alike.
type subjectGroup struct {
	key     int     // the group's key, the same for equal groups of other policies
	members []int32 // sorted
	pods    int
	fam     uint8
	admins  int // with admin policies: the index of their list in linter.adminLists
}

// subjectGroups groups the classes of subjects by what the subject side of
// a flow looks at: its classBase and, withAdmin, the admin policies that
// select it (AdminRule).
func (l *linter) subjectGroups(subjects []int, withAdmin bool) []subjectGroup {
	s := l.space
	index := map[string]int{}
	var out []subjectGroup
	for _, c := range subjects {
		k, admins := s.base[c], -1
		if withAdmin {
			admins = l.adminListOf(c)
			k += "|" + strconv.Itoa(admins)
		}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			id, ok := s.subjectKeys[k]
			if !ok {
				id = len(s.subjectKeys)
				s.subjectKeys[k] = id
			}
			out = append(out, subjectGroup{key: id, fam: s.fam[c], admins: admins})
		}
		out[i].members = append(out[i].members, int32(c))
		out[i].pods += len(s.classes[c])
	}
	return out
}

// adminListOf returns the index in l.adminLists of the admin-tier
// policies that select class c, in evaluation order.
func (l *linter) adminListOf(c int) int {
	if l.adminOf == nil {
		lists := make([][]*policy.Policy, len(l.space.classes))
		for _, p := range l.set.Admin {
			for _, sc := range l.subjectClasses(p) {
				lists[sc] = append(lists[sc], p)
			}
		}
		ids := map[string]int{}
		l.adminOf = make([]int, len(lists))
		var b strings.Builder
		for c, list := range lists {
			b.Reset()
			for _, p := range list {
				b.WriteString(p.Ref.String())
				b.WriteByte(';')
			}
			id, ok := ids[b.String()]
			if !ok {
				id = len(l.adminLists)
				ids[b.String()] = id
				l.adminLists = append(l.adminLists, list)
			}
			l.adminOf[c] = id
		}
	}
	return l.adminOf[c]
}

// question says what a check asks of the flows of one direction.
type question struct {
	dir policy.Direction
	// withAdmin: the answers depend on the admin policies that select the
	// subject (AdminRule).
	withAdmin bool
	// rules are the admin-tier rules whose matches the answers depend on,
	// for a subject group, with a key that names them.
	rules func(sg subjectGroup) (key string, rules []*policy.Rule)
	// pairs: the answers depend on selections the peer groups do not hold
	// (NetworkPolicy rules against each other): ask pair by pair, among
	// the classes the peers can match.
	pairs bool
}

// cells calls fn for cells covering every flow between the classes of
// subjects and the classes peers can match, each flow once; fn returns
// false to stop.
func (l *linter) cells(q question, subjects []int, peers [2]peerSet, fn func(cell) bool) {
	switch {
	case l.pairwise:
		l.pairCells(subjects, nil, fn)
		return
	case q.pairs:
		l.pairCells(subjects, candidates(peers), fn)
		return
	}
	s := l.space
	var parts []part
	var touched []int32
	var gen uint32
	for _, sg := range l.subjectGroups(subjects, q.withAdmin) {
		key, rules := "", []*policy.Rule(nil)
		if q.rules != nil {
			key, rules = q.rules(sg)
		}
		s1, s2 := sg.members[0], int32(-1)
		if len(sg.members) > 1 {
			s2 = sg.members[1]
		}
		for fam := range peers {
			if sg.fam&familyBit[fam] == 0 {
				continue
			}
			oc := l.outcomeClasses(key, rules, fam, q.dir)
			gen++
			touched = touched[:0]
			add := func(o int32) *part {
				for int(o) >= len(parts) {
					parts = append(parts, part{})
				}
				p := &parts[o]
				if p.gen != gen {
					*p = part{gen: gen, p1: -1, p2: -1, self: -1}
					touched = append(touched, o)
				}
				return p
			}
			for _, h := range s.histogram(peers[fam]) {
				if flowFamily(sg.fam, s.groupFam[h.group]) != fam {
					continue
				}
				p := add(oc.of(h.group))
				p.pods += h.pods
				for _, c := range [2]int32{h.p1, h.p2} {
					if c >= 0 {
						switch {
						case p.p1 < 0 || c < p.p1:
							p.p1, p.p2 = c, p.p1
						case p.p2 < 0 || c < p.p2:
							p.p2 = c
						}
					}
				}
			}
			for _, c := range sg.members {
				if flowFamily(s.fam[c], s.fam[c]) != fam || !peers[fam].has(int(c)) {
					continue
				}
				p := add(oc.of(s.groupOf[c]))
				n := len(s.classes[c])
				p.squares += n * n
				p.selfWeight += n * (n - 1)
				if n > 1 && p.self < 0 {
					p.self = c
				}
			}
			slices.Sort(touched) // stable order of questions, for the memos' sake only
			for _, o := range touched {
				p := parts[o]
				if w := sg.pods*p.pods - p.squares; w > 0 {
					c := cell{weight: w, sg: sg.key, fam: fam, oc: int(o)}
					switch {
					case s1 != p.p1:
						c.sc, c.pc = int(s1), int(p.p1)
					case p.p2 >= 0:
						c.sc, c.pc = int(s1), int(p.p2)
					default:
						c.sc, c.pc = int(s2), int(p.p1)
					}
					if !fn(c) {
						return
					}
				}
				if p.selfWeight > 0 {
					if !fn(cell{sc: int(p.self), pc: int(p.self), weight: p.selfWeight, sg: sg.key, fam: fam, oc: int(o)}) {
						return
					}
				}
			}
		}
	}
}

var familyBit = [2]uint8{hasIPv4, hasIPv6}

// part is the peers of one outcome class, for one subject group.
type part struct {
	gen    uint32 // cells' pass that wrote it
	pods   int
	p1, p2 int32 // the first two peer classes, -1 when absent
	// Subject classes in the part: pairs of a class with itself.
	squares    int   // Σ size²: pairs of a class with itself, not in the part's cell
	selfWeight int   // Σ size·(size-1): pairs of two members
	self       int32 // the first such class with two members, -1 without
}

// outcomes maps peer groups to outcome classes: groups that the rules of
// one question cannot tell apart.
type outcomes struct {
	rules [][]uint64 // per rule, the groups its peers can match (a bit set)
	base  bool       // the groups' classBase matters too
	ids   map[string]int32
	of_   map[int32]int32
	s     *space
	buf   []byte
}

// of returns the outcome class of group g.
func (o *outcomes) of(g int32) int32 {
	if id, ok := o.of_[g]; ok {
		return id
	}
	b := append(o.buf[:0], o.s.groupFam[g])
	for _, set := range o.rules {
		if set[g/64]&(1<<(g%64)) != 0 {
			b = append(b, '1')
		} else {
			b = append(b, '0')
		}
	}
	if o.base {
		b = append(b, o.s.groupBase[g]...)
	}
	o.buf = b
	id, ok := o.ids[string(b)]
	if !ok {
		id = int32(len(o.ids))
		o.ids[string(b)] = id
	}
	o.of_[g] = id
	return id
}

// outcomeClasses returns the outcome classes of a question's rules for
// flows of family fam in direction dir. A peer group's part in the answer
// is whether each rule's peers match it, its families and, for egress
// (the peer is the destination: named ports resolve on it, examples
// prefer its declared ports) or where selections are relative to the
// subject's namespace, its classBase.
func (l *linter) outcomeClasses(key string, rules []*policy.Rule, fam int, dir policy.Direction) *outcomes {
	k := outcomeKey{key, fam, dir}
	if o, ok := l.outcomes[k]; ok {
		return o
	}
	o := &outcomes{base: dir == policy.Egress || l.space.relative, ids: map[string]int32{}, of_: map[int32]int32{}, s: l.space}
	for _, r := range rules {
		o.rules = append(o.rules, l.ruleGroups(r, fam))
	}
	l.outcomes[k] = o
	return o
}

type outcomeKey struct {
	key string
	fam int
	dir policy.Direction
}

// ruleGroups is the set of peer groups that admin-tier rule r's peers can
// match in flows of family fam: whole groups, as groups hold its
// selections and networks.
func (l *linter) ruleGroups(r *policy.Rule, fam int) []uint64 {
	if sets, ok := l.groupSets[r]; ok && sets[fam] != nil {
		return sets[fam]
	}
	sets := l.groupSets[r]
	set := make([]uint64, (len(l.space.groupFam)+63)/64)
	for _, h := range l.space.histogram(l.peers(r)[fam]) {
		set[h.group/64] |= 1 << (h.group % 64)
	}
	sets[fam] = set
	l.groupSets[r] = sets
	return set
}

// pairCells calls fn for each pair of a subject class and a class of
// candidates (nil: every class), one cell per pair: for question.pairs,
// and, with linter.pairwise, the reference the grouped cells are tested
// against.
func (l *linter) pairCells(subjects []int, candidates []int32, fn func(cell) bool) {
	s := l.space
	for _, sc := range subjects {
		visit := func(pc int) bool {
			_, _, weight, ok := pair(s.classes[sc], s.classes[pc], sc == pc)
			if !ok || flowFamily(s.fam[sc], s.fam[pc]) < 0 {
				return true
			}
			return fn(cell{sc: sc, pc: pc, weight: weight, sg: -1})
		}
		if candidates == nil {
			for pc := range s.classes {
				if !visit(pc) {
					return
				}
			}
			continue
		}
		for _, pc := range candidates {
			if !visit(int(pc)) {
				return
			}
		}
	}
}

// candidates are the classes either family's peer set holds, sorted; nil
// for every class.
func candidates(peers [2]peerSet) []int32 {
	if peers[0].all || peers[1].all {
		return nil
	}
	var out []int32
	for _, m := range peers {
		for _, list := range m.lists {
			out = append(out, list...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ruleFlows calls fn for every flow r matches, from the pods of the given
// subject classes, with the cell it stands for and the port's index in
// space.ports; fn returns false to stop. q.dir is r's.
func (l *linter) ruleFlows(r *policy.Rule, subjects []int, q question, fn func(f engine.Flow, c cell, port int) bool) {
	ports := l.space.rulePorts(r)
	l.cells(q, subjects, l.peers(r), func(c cell) bool {
		f, ok := l.space.cellFlow(c, r.Dir)
		if !ok {
			return true
		}
		for _, i := range ports {
			f.Port = l.space.ports[i]
			if l.e.RuleMatches(r, f) && !fn(f, c, i) {
				return false
			}
		}
		return true
	})
}

// familyAddr picks a pod's address of a family (state.Pod.IP).
var familyAddr = [2]netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()}

// classBase writes what both ends of a flow look at in a class, but its
// selections: the families, the ports of the two members pair picks (the
// first stands for the class, the second is the peer of the class towards
// itself; named ports resolve and examples are chosen on them) and, where
// some selection is relative to the subject, the namespace.
func classBase(members []*state.Pod, relative bool) (string, uint8) {
	var fam uint8
	for _, ip := range members[0].IPs {
		if ip.Is4() {
			fam |= hasIPv4
		} else {
			fam |= hasIPv6
		}
	}
	var b strings.Builder
	b.WriteByte('0' + fam)
	second := members[0]
	if len(members) > 1 {
		second = members[1]
	}
	for _, p := range []*state.Pod{members[0], second} {
		b.WriteByte('|')
		for _, cp := range p.Ports {
			b.WriteString(cp.String())
			b.WriteByte(',')
		}
	}
	if relative {
		b.WriteByte('|')
		b.WriteString(members[0].Namespace.Name)
	}
	return b.String(), fam
}
