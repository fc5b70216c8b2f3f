package diff

import (
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// A pod whose verdicts may change (a loud pod: not quiet) must be decided
// against every other class, in both directions: rows and columns of the
// class matrix. Most of the cells of a row are alike, though. The egress
// of a row's pods towards a destination looks at that destination only
// through the peers of the row's own egress rules (do they match it?) and
// its ports (named ports resolve on it); the destination's ingress looks
// at its own policies and features. So the destinations of a row fall
// into few kinds, keyed by both, and one destination of each kind answers
// for all (the same for the sources of a column). A pull request that
// flips an admin rule makes hundreds of classes loud; they are decided a
// few dozen pairs each instead of a few thousand.

// differ holds one comparison.
type differ struct {
	old, new         *engine.Engine
	oldPods, newPods []*state.Pod
	members          [][]int // joint class -> indexes into oldPods/newPods
	ports            []l4.Port
	segs             []l4.Range
	keys             policyKeys
	relative         bool // some selection is relative to the subject's namespace
	// peerBits remembers, per subject rules and direction, the bits of
	// every other class (peerBitsOf).
	peerBits map[string][]string
	srcKeys  []string // per class: sourceKey, when computed
	dstKeys  []string
}

func newDiffer(old, new *engine.Engine, oldPods, newPods []*state.Pod, members [][]int, segs []l4.Range) *differ {
	d := &differ{old: old, new: new, oldPods: oldPods, newPods: newPods, members: members, segs: segs,
		keys: newPolicyKeys(), peerBits: map[string][]string{},
		srcKeys: make([]string, len(members)), dstKeys: make([]string, len(members))}
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
	for k, seg := range d.segs {
		was := allowed(d.old, d.oldPods[src], d.oldPods[dst], d.ports[k])
		is := allowed(d.new, d.newPods[src], d.newPods[dst], d.ports[k])
		switch {
		case is && !was:
			gained = extend(gained, seg)
		case was && !is:
			lost = extend(lost, seg)
		}
	}
	return gained, lost
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

// row decides class a as a source towards every class in others but
// itself, one destination of each kind, and calls add for each pair that
// changed.
func (d *differ) row(a int, others []int, add func(a, b int, gained, lost []PortRange)) {
	d.line(a, others, policy.Egress, add)
}

// column decides every class in others but b as a source towards b.
func (d *differ) column(b int, others []int, add func(a, b int, gained, lost []PortRange)) {
	d.line(b, others, policy.Ingress, add)
}

// line decides the pairs of class c with each class of others: c is the
// source (dir egress) or the destination (dir ingress).
func (d *differ) line(c int, others []int, dir policy.Direction, add func(a, b int, gained, lost []PortRange)) {
	type kind struct {
		rep           int // the class that answers for the kind
		gained, lost  []PortRange
		changed, done bool
	}
	kinds := map[string]*kind{}
	for _, o := range others {
		if o == c {
			continue
		}
		var k string
		if dir == policy.Egress {
			k = d.peerBitsOf(c, policy.Egress, o) + "\n" + d.dstKey(o)
		} else {
			k = d.peerBitsOf(c, policy.Ingress, o) + "\n" + d.srcKey(o)
		}
		kd := kinds[k]
		if kd == nil {
			kd = &kind{rep: o}
			kinds[k] = kd
		}
		if !kd.done {
			src, dst := d.members[c][0], d.members[o][0]
			if dir == policy.Ingress {
				src, dst = dst, src
			}
			kd.gained, kd.lost = d.decide(src, dst)
			kd.changed, kd.done = len(kd.gained) > 0 || len(kd.lost) > 0, true
		}
		if kd.changed {
			if dir == policy.Egress {
				add(c, o, kd.gained, kd.lost)
			} else {
				add(o, c, kd.gained, kd.lost)
			}
		}
	}
}

// peerBitsOf says which rules of class c's policies for direction dir
// match class o's pod at the other end, in OLD and in NEW: all that the
// rules of c look at in o, but for its ports.
func (d *differ) peerBitsOf(c int, dir policy.Direction, o int) string {
	oc, nc := d.pods(c)
	memo := d.rulesKey(oc, nc, dir)
	bits := d.peerBits[memo]
	if bits == nil {
		bits = make([]string, len(d.members))
		d.peerBits[memo] = bits
	}
	if bits[o] != "" {
		return bits[o]
	}
	oo, no := d.pods(o)
	var b strings.Builder
	b.WriteByte('|') // never empty: "" marks what is not computed
	for _, s := range [2]struct {
		e            *engine.Engine
		subject, obj *state.Pod
	}{{d.old, oc, oo}, {d.new, nc, no}} {
		src, dst := s.subject, s.obj
		if dir == policy.Ingress {
			src, dst = dst, src
		}
		f, ok := s.e.PodFlow(src, dst, l4.Port{})
		if !ok {
			b.WriteString("no flow|")
			continue
		}
		for _, p := range s.e.Applicable(s.subject) {
			if !d.says(p, dir) {
				continue
			}
			for _, r := range p.Rules[dir] {
				if s.e.PeerMatches(r, f) {
					b.WriteByte('1')
				} else {
					b.WriteByte('0')
				}
			}
		}
		b.WriteByte('|')
	}
	bits[o] = b.String()
	return bits[o]
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
// destination, and what a destination's ingress looks at in it but for its
// rules' peers: its egress policies, families, host network and node
// (a host-network pod is its node), namespace where selections are
// relative; in OLD and NEW.
func (d *differ) srcKey(c int) string {
	if d.srcKeys[c] == "" {
		old, new := d.pods(c)
		d.srcKeys[c] = d.sideKey(old, new, policy.Egress, false)
	}
	return d.srcKeys[c]
}

// dstKey is srcKey for a destination: its ingress policies, families,
// ports (named ports resolve on it), node (traffic from its own node), the
// legacy isolation of its namespace, namespace where selections are
// relative; in OLD and NEW.
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
