package diff

import (
	"slices"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// A pod whose verdicts may change (a loud pod: not quiet) must be decided
// against every other class, in both directions: rows and columns of the
// class matrix. A verdict is the source's egress and the destination's
// ingress, and along a row (a loud source, every destination) each side
// takes few values. The row's egress towards a destination looks at it only
// through the peers of the row's own egress rules (which match it?), its
// ports (named ports resolve on it) and its families: destinations alike
// in those share the egress answer. The destination's ingress from the row
// looks at the row's pod, fixed, and the destination's own policies and
// features: destinations alike in those share the ingress answer. And a
// destination that is quiet for ingress, from a row whose pod is the same
// on both sides, has the same ingress answer in OLD and NEW: it is asked
// only where the egress answer changed. Columns (a loud destination, the
// quiet sources) are the same with the sides swapped. A pull request that
// flips an admin rule makes hundreds of classes loud; each costs a few
// dozen questions instead of a few thousand.

// differ holds one comparison.
type differ struct {
	old, new         *engine.Engine
	oldPods, newPods []*state.Pod
	members          [][]int // joint class -> indexes into oldPods/newPods
	ports            []l4.Port
	segs             []l4.Range
	keys             policyKeys
	was, is          []bool // decide's buffers
	relative         bool   // some selection is relative to the subject's namespace
	// peerBits remembers, per subject rules and direction, the bits of
	// the other classes asked about (peerBitsOf).
	peerBits map[string]map[int32]string
	srcKeys  []string // per class: srcKey, when computed
	dstKeys  []string
	peerKeys [2][]string // per direction and class: peerKey
	// same is, per class, whether some pod of it is the same in OLD and
	// NEW (quiet sets it).
	same []bool
}

func newDiffer(old, new *engine.Engine, oldPods, newPods []*state.Pod, members [][]int, segs []l4.Range) *differ {
	d := &differ{old: old, new: new, oldPods: oldPods, newPods: newPods, members: members, segs: segs,
		keys: newPolicyKeys(), peerBits: map[string]map[int32]string{},
		srcKeys: make([]string, len(members)), dstKeys: make([]string, len(members))}
	d.peerKeys = [2][]string{make([]string, len(members)), make([]string, len(members))}
	d.was, d.is = make([]bool, len(segs)), make([]bool, len(segs))
	d.ports = make([]l4.Port, len(segs))
	for k, s := range segs {
		d.ports[k] = l4.Port{Proto: s.Proto, Num: s.First}
	}
	for _, e := range []*engine.Engine{old, new} {
		for _, p := range e.Policies().Policies() {
			for _, rules := range p.Rules {
				for _, r := range rules {
					for _, peer := range r.Peers {
						d.relative = d.relative || peer.Kind == policy.PeerPods && peer.Pods.Namespaces.Relative()
					}
				}
			}
		}
	}
	return d
}

// pods returns the first pod of class c in OLD and in NEW: the pod that
// decides for the class.
func (d *differ) pods(c int) (*state.Pod, *state.Pod) {
	i := d.members[c][0]
	return d.oldPods[i], d.newPods[i]
}

// decide decides the pods src -> dst (indexes into oldPods/newPods) on
// every segment in OLD and NEW, and returns the ranges gained and lost.
func (d *differ) decide(src, dst int) (gained, lost []PortRange) {
	was, is := d.allowed(d.old, d.oldPods[src], d.oldPods[dst], d.was), d.allowed(d.new, d.newPods[src], d.newPods[dst], d.is)
	for k, seg := range d.segs {
		switch {
		case is[k] && !was[k]:
			gained = extend(gained, seg)
		case was[k] && !is[k]:
			lost = extend(lost, seg)
		}
	}
	return gained, lost
}

// allowed decides src -> dst on every segment's first port into out, as
// the matrix builds the flow (engine.PodFlow): no flow, no connection.
func (d *differ) allowed(e *engine.Engine, src, dst *state.Pod, out []bool) []bool {
	f, ok := e.PodFlow(src, dst, l4.Port{})
	if !ok {
		clear(out)
		return out
	}
	e.AllowedPorts(f, d.ports, out)
	return out
}

// pair decides class a towards class b, by their first pods (a class
// towards itself: its first two, as engine.Representatives picks them;
// not at all with one pod, which only talks to itself), and calls add if
// the pair changed.
func (d *differ) pair(a, b int, add func(a, b int, gained, lost []PortRange)) {
	src, dst := d.members[a][0], d.members[b][0]
	if a == b {
		if len(d.members[a]) < 2 {
			return
		}
		dst = d.members[a][1]
	}
	if gained, lost := d.decide(src, dst); len(gained) > 0 || len(lost) > 0 {
		add(a, b, gained, lost)
	}
}

// row decides class a, whose egress may change, as a source towards every
// class of others but itself, and calls add for each pair that changed.
func (d *differ) row(a int, others []int, quietDst []bool, add func(a, b int, gained, lost []PortRange)) {
	rules := d.subjectRules(a, policy.Egress)
	sides := newSideMemo(d)
	for _, b := range others {
		if b == a {
			continue
		}
		if quietDst[b] && d.same[a] && !rules.mayChange(d, b) {
			continue // neither side changes
		}
		src, dst := d.members[a][0], d.members[b][0]
		egress := sides.decide(policy.Egress, d.peerBitsOf(rules, b)+"\n"+d.peerKey(b, policy.Egress), src, dst, true)
		// The destination's ingress changes only if it or the source's pod
		// does.
		both := !quietDst[b] || !d.same[a]
		if !both && slices.Equal(egress[0], egress[1]) {
			continue
		}
		ingress := sides.decide(policy.Ingress, d.dstKey(b), src, dst, both)
		d.report(a, b, egress, ingress, add)
	}
}

// column decides every class of others but b, whose egress cannot change,
// as a source towards class b, whose ingress may.
func (d *differ) column(b int, others []int, add func(a, b int, gained, lost []PortRange)) {
	rules := d.subjectRules(b, policy.Ingress)
	sides := newSideMemo(d)
	for _, a := range others {
		if a == b {
			continue
		}
		if d.same[b] && !rules.mayChange(d, a) {
			continue // neither side changes
		}
		src, dst := d.members[a][0], d.members[b][0]
		ingress := sides.decide(policy.Ingress, d.peerBitsOf(rules, a)+"\n"+d.peerKey(a, policy.Ingress), src, dst, true)
		// The source's egress changes only if the destination's pod does.
		both := !d.same[b]
		if !both && slices.Equal(ingress[0], ingress[1]) {
			continue
		}
		egress := sides.decide(policy.Egress, d.srcKey(a), src, dst, both)
		d.report(a, b, egress, ingress, add)
	}
}

// report adds a -> b if its verdicts, egress and ingress in OLD ([0]) and
// NEW ([1]) on each segment, changed.
func (d *differ) report(a, b int, egress, ingress [2][]bool, add func(a, b int, gained, lost []PortRange)) {
	var gained, lost []PortRange
	for k, seg := range d.segs {
		was, is := egress[0][k] && ingress[0][k], egress[1][k] && ingress[1][k]
		switch {
		case is && !was:
			gained = extend(gained, seg)
		case was && !is:
			lost = extend(lost, seg)
		}
	}
	if len(gained) > 0 || len(lost) > 0 {
		add(a, b, gained, lost)
	}
}

// sideMemo keeps the answers of one side along a line, by the key of what
// they depend on.
type sideMemo struct {
	d       *differ
	answers map[sideKey][2][]bool
}

type sideKey struct {
	dir policy.Direction
	key string
}

func newSideMemo(d *differ) *sideMemo { return &sideMemo{d: d, answers: map[sideKey][2][]bool{}} }

// decide returns side dir of the pods src -> dst (indexes into
// oldPods/newPods) on every segment in OLD and, with both, in NEW
// (without, NEW's answer is OLD's). key names what the answer depends on.
func (m *sideMemo) decide(dir policy.Direction, key string, src, dst int, both bool) [2][]bool {
	k := sideKey{dir, key}
	if ans, ok := m.answers[k]; ok && (ans[1] != nil || !both) {
		if ans[1] == nil {
			ans[1] = ans[0]
		}
		return ans
	}
	d := m.d
	var ans [2][]bool
	ans[0] = d.side(d.old, dir, d.oldPods[src], d.oldPods[dst])
	if both {
		ans[1] = d.side(d.new, dir, d.newPods[src], d.newPods[dst])
	}
	m.answers[k] = ans
	if ans[1] == nil {
		ans[1] = ans[0]
	}
	return ans
}

// side decides one side of src -> dst on every segment's first port, as
// the matrix builds the flow (engine.PodFlow): no flow, no connection.
func (d *differ) side(e *engine.Engine, dir policy.Direction, src, dst *state.Pod) []bool {
	out := make([]bool, len(d.ports))
	if f, ok := e.PodFlow(src, dst, l4.Port{}); ok {
		e.SidePorts(dir, f, d.ports, out)
	}
	return out
}

// peerKey writes what a rule looks at in the pod at its other end besides
// its peers (peerBitsOf), in OLD and NEW: for egress rules, the
// destination's ports (named ports resolve on it) and families; for
// ingress rules, the source's families and, if it is on the host network,
// its node (traffic from a pod's own node).
func (d *differ) peerKey(c int, dir policy.Direction) string {
	if k := d.peerKeys[dir][c]; k != "" {
		return k
	}
	var b strings.Builder
	old, new := d.pods(c)
	for _, p := range [2]*state.Pod{old, new} {
		b.WriteString("|" + families(p) + "|" + strconv.FormatBool(p.HostNetwork))
		if p.HostNetwork {
			b.WriteString("|" + p.Node)
		}
		if dir == policy.Egress {
			b.WriteByte('|')
			for _, cp := range p.Ports {
				b.WriteString(cp.String() + ",")
			}
		}
	}
	d.peerKeys[dir][c] = b.String()
	return d.peerKeys[dir][c]
}

// lineRules are the rules of a class's policies for one direction, in OLD
// and in NEW, with its pods there.
type lineRules struct {
	dir   policy.Direction
	key   string // rulesKey: what the answers of peerBitsOf depend on
	sides [2]lineSide
	// isolation: whether NetworkPolicies isolate the pod in dir differs
	// between OLD and NEW.
	isolation bool
}

type lineSide struct {
	e     *engine.Engine
	pod   *state.Pod
	rules []*policy.Rule
	// changed are the rules of the policies this side has and the other
	// has not (by content).
	changed []*policy.Rule
}

func (d *differ) subjectRules(c int, dir policy.Direction) *lineRules {
	old, new := d.pods(c)
	lr := &lineRules{dir: dir, key: d.rulesKey(old, new, dir)}
	var lists [2][]*policy.Policy
	var isolated [2]bool
	for i, s := range [2]lineSide{{e: d.old, pod: old}, {e: d.new, pod: new}} {
		for _, p := range s.e.Applicable(s.pod) {
			if d.says(p, dir) {
				lists[i] = append(lists[i], p)
				s.rules = append(s.rules, p.Rules[dir]...)
			}
		}
		isolated[i] = s.e.Isolated(s.pod, dir)
		lr.sides[i] = s
	}
	lr.isolation = isolated[0] != isolated[1]
	count := map[int]int{}
	for _, p := range lists[1] {
		count[d.keys.of(p)]++
	}
	for _, p := range lists[0] {
		if k := d.keys.of(p); count[k] > 0 {
			count[k]--
		} else {
			lr.sides[0].changed = append(lr.sides[0].changed, p.Rules[dir]...)
		}
	}
	for _, p := range lists[1] {
		if k := d.keys.of(p); count[k] > 0 {
			count[k]--
			lr.sides[1].changed = append(lr.sides[1].changed, p.Rules[dir]...)
		}
	}
	return lr
}

// mayChange reports whether the side of the line's class towards (or
// from) class o can differ between OLD and NEW when both pods are the same
// on both sides. The policies both sides have keep their order (it follows
// from their content), so where no rule of the others matches o and
// isolation is the same, the first matching rule, the union of the
// NetworkPolicy rules and the outcome are too.
func (lr *lineRules) mayChange(d *differ, o int) bool {
	if lr.isolation {
		return true
	}
	oo, no := d.pods(o)
	for i, s := range lr.sides {
		if len(s.changed) == 0 {
			continue
		}
		src, dst := s.pod, [2]*state.Pod{oo, no}[i]
		if lr.dir == policy.Ingress {
			src, dst = dst, src
		}
		f, ok := s.e.PodFlow(src, dst, l4.Port{})
		if !ok {
			continue // no flow in either: nothing to change
		}
		for _, r := range s.changed {
			if s.e.PeerMatches(r, f) {
				return true
			}
		}
	}
	return false
}

// peerBitsOf says which of a class's rules (lr) match class o's pod at the
// other end, in OLD and in NEW: all that those rules look at in o, but for
// its ports.
func (d *differ) peerBitsOf(lr *lineRules, o int) string {
	bits := d.peerBits[lr.key]
	if bits == nil {
		bits = map[int32]string{}
		d.peerBits[lr.key] = bits
	}
	if b, ok := bits[int32(o)]; ok {
		return b
	}
	oo, no := d.pods(o)
	var b strings.Builder
	for i, s := range lr.sides {
		src, dst := s.pod, [2]*state.Pod{oo, no}[i]
		if lr.dir == policy.Ingress {
			src, dst = dst, src
		}
		f, ok := s.e.PodFlow(src, dst, l4.Port{})
		if !ok {
			b.WriteString("no flow|")
			continue
		}
		for _, r := range s.rules {
			if s.e.PeerMatches(r, f) {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
		b.WriteByte('|')
	}
	bits[int32(o)] = b.String()
	return bits[int32(o)]
}

// rulesKey names what peerBitsOf's answers for a subject depend on: its
// policies for dir in OLD and NEW, its families (which address of the
// other end a flow takes) and, with relative selections, its namespace.
func (d *differ) rulesKey(old, new *state.Pod, dir policy.Direction) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(int(dir)))
	for _, s := range [2]struct {
		e *engine.Engine
		p *state.Pod
	}{{d.old, old}, {d.new, new}} {
		b.WriteByte('|')
		for _, p := range s.e.Applicable(s.p) {
			if d.says(p, dir) {
				b.WriteString(strconv.Itoa(d.keys.of(p)) + ",")
			}
		}
		b.WriteString("|" + families(s.p))
		if d.relative {
			b.WriteString("|" + s.p.Namespace.Name)
			writeLabels(&b, s.p.Namespace.Labels)
		}
	}
	return b.String()
}

// srcKey says what a class's own egress looks at, towards a given
// destination: its egress policies, families, host network (a host-network
// pod is not selected), namespace where selections are relative; in OLD
// and NEW.
func (d *differ) srcKey(c int) string {
	if d.srcKeys[c] == "" {
		old, new := d.pods(c)
		d.srcKeys[c] = d.sideKey(old, new, policy.Egress, false)
	}
	return d.srcKeys[c]
}

// dstKey is srcKey for a destination's ingress from a given source: its
// ingress policies, families, host network, ports (named ports resolve on
// it), node (traffic from its own node), the legacy isolation of its
// namespace, namespace where selections are relative; in OLD and NEW.
func (d *differ) dstKey(c int) string {
	if d.dstKeys[c] == "" {
		old, new := d.pods(c)
		d.dstKeys[c] = d.sideKey(old, new, policy.Ingress, true)
	}
	return d.dstKeys[c]
}

func (d *differ) sideKey(old, new *state.Pod, dir policy.Direction, dst bool) string {
	var b strings.Builder
	for _, s := range [2]struct {
		e *engine.Engine
		p *state.Pod
	}{{d.old, old}, {d.new, new}} {
		p := s.p
		b.WriteString("|")
		for _, pol := range s.e.Applicable(p) {
			if d.says(pol, dir) {
				b.WriteString(strconv.Itoa(d.keys.of(pol)) + ",")
			}
		}
		b.WriteString("|" + families(p) + "|" + strconv.FormatBool(p.HostNetwork))
		if p.HostNetwork || dst {
			b.WriteString("|" + p.Node)
		}
		if dst {
			b.WriteByte('|')
			for _, cp := range p.Ports {
				b.WriteString(cp.String() + ",")
			}
			b.WriteString(strconv.FormatBool(p.Namespace.LegacyIngressIsolation))
		}
		if d.relative {
			b.WriteString("|" + p.Namespace.Name)
			writeLabels(&b, p.Namespace.Labels)
		}
	}
	return b.String()
}

// families writes which address families a pod has.
func families(p *state.Pod) string {
	var v4, v6 bool
	for _, ip := range p.IPs {
		v4, v6 = v4 || ip.Is4(), v6 || !ip.Is4()
	}
	return strconv.FormatBool(v4) + strconv.FormatBool(v6)
}
