package lint

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// linter holds one run.
type linter struct {
	e     *engine.Engine
	set   *policy.Set
	space *space
	// subjects caches the classes each policy selects.
	subjects map[*policy.Policy][]int
	// adminOf is, per class, the index in adminLists of the admin-tier
	// policies that select it (adminListOf); built on first use.
	adminOf    []int
	adminLists [][]*policy.Policy
	// outcomes and groupSets keep what cells learnt of questions and rules.
	outcomes  map[outcomeKey]*outcomes
	groupSets map[*policy.Rule][2][]uint64
	// policies finds a policy by reference (decider).
	policies map[policy.Ref]*policy.Policy
	// nsSelected and blockPods remember namespaces by selector and pods by
	// IP block, for selectedNamespaces and destinations.
	nsSelected map[string][]*state.Namespace
	blockPods  map[string][]*state.Pod
	// adminRules remembers the answers of adminRule, and the last cell's.
	adminRules map[adminKey][]*policy.Rule
	lastAdmin  adminKey
	lastRules  []*policy.Rule
	// pairwise makes cells one pair of classes each, as lint asked before
	// it grouped them: the reference of TestCellsAgreeWithPairs.
	pairwise bool
	out      []Finding
}

func newLinter(e *engine.Engine) *linter {
	l := &linter{e: e, set: e.Policies(), space: newSpace(e), subjects: map[*policy.Policy][]int{},
		policies: map[policy.Ref]*policy.Policy{}, adminRules: map[adminKey][]*policy.Rule{},
		outcomes: map[outcomeKey]*outcomes{}, groupSets: map[*policy.Rule][2][]uint64{},
		nsSelected: map[string][]*state.Namespace{}, blockPods: map[string][]*state.Pod{}}
	for _, p := range l.set.Policies() {
		l.policies[p.Ref] = p
	}
	l.space.peerGroups(l)
	return l
}

func (l *linter) add(f Finding) { l.out = append(l.out, f) }

// subjectClasses returns the classes of the pods p selects, sorted. A class
// is either wholly selected or not at all: subject selectors are part of
// what makes pods one class.
func (l *linter) subjectClasses(p *policy.Policy) []int {
	if cs, ok := l.subjects[p]; ok {
		return cs
	}
	var cs []int
	s := l.space
	s.stamp++
	for _, pod := range l.e.Members(p) {
		if c := s.classOf[pod.ID]; c >= 0 && s.seen[c] != s.stamp {
			s.seen[c] = s.stamp
			cs = append(cs, c)
		}
	}
	slices.Sort(cs)
	l.subjects[p] = cs
	return cs
}

// space is the ground lint explores: the pods that policies can select,
// grouped into behaviour classes, and one port of each range of ports that
// no rule and no container port splits.
type space struct {
	e       *engine.Engine
	classes [][]*state.Pod
	classOf []int // by pod ID; -1 for host-network pods
	ports   []l4.Port
	named   map[string]map[l4.Port]bool // container port name -> the ports it names on some pod
	// portsOfRule remembers rulePorts.
	portsOfRule map[*policy.Rule][]int

	// What cells group classes by (cells.go): per class, its families and
	// what both ends of a flow look at (classBase); its peer group; per
	// peer group, the families and the group's part of every peer set.
	fam       []uint8
	base      []string
	relative  bool // some selection is relative to the subject's namespace
	groupOf   []int32
	groupFam  []uint8
	groupBase []string
	allGroups histogram
	// subjectKeys numbers the keys of subject groups, for memos that
	// outlive one policy's groups.
	subjectKeys map[string]int

	bySelection map[int32][]int32
	byBlock     map[blockKey][]int32
	histograms  map[string]histogram
	// seen and stamp mark classes without clearing: a class is marked
	// when seen[c] == stamp.
	seen  []uint32
	stamp uint32
}

func newSpace(e *engine.Engine) *space {
	c := e.Cluster()
	var pods []*state.Pod
	for _, p := range c.Pods {
		if !p.HostNetwork && len(p.IPs) > 0 {
			pods = append(pods, p)
		}
	}
	s := &space{e: e, classes: e.ClassMembers(pods), classOf: make([]int, len(c.Pods)),
		portsOfRule: map[*policy.Rule][]int{}, subjectKeys: map[string]int{}, bySelection: map[int32][]int32{}, byBlock: map[blockKey][]int32{}, histograms: map[string]histogram{}}
	s.seen = make([]uint32, len(s.classes))
	for i := range s.classOf {
		s.classOf[i] = -1
	}
	for i, members := range s.classes {
		for _, p := range members {
			s.classOf[p.ID] = i
		}
	}
	s.ports = portReps(e.Policies(), pods)
	s.named = map[string]map[l4.Port]bool{}
	for _, p := range pods {
		for _, cp := range p.Ports {
			if cp.Name == "" {
				continue
			}
			if s.named[cp.Name] == nil {
				s.named[cp.Name] = map[l4.Port]bool{}
			}
			s.named[cp.Name][cp.Port] = true
		}
	}
	return s
}

// peerGroups groups the classes by what a peer shows the checks: its
// classBase, the selections of admin- and baseline-tier rules that hold it
// and the admin networks its addresses are in. Rules of those tiers then
// match all of a group or none of it, so an admin rule's answer holds for
// the group.
func (s *space) peerGroups(l *linter) {
	var selections []engine.Selection
	seenSel := map[int32]bool{}
	var blocks []policy.IPBlock
	seenBlock := map[string]bool{}
	for _, p := range l.set.Policies() {
		for _, rules := range p.Rules {
			for _, r := range rules {
				for k, peer := range r.Peers {
					s.relative = s.relative || peer.Kind == policy.PeerPods && peer.Pods.Namespaces.Relative()
					if p.Tier == policy.TierNetworkPolicy {
						continue
					}
					switch peer.Kind {
					case policy.PeerPods:
						if sel, ok := l.e.PeerSelection(r, k); ok && !seenSel[sel.ID] {
							seenSel[sel.ID] = true
							selections = append(selections, sel)
						}
					case policy.PeerIPBlock:
						if key := peer.Block.String(); !seenBlock[key] {
							seenBlock[key] = true
							blocks = append(blocks, peer.Block)
						}
					}
				}
			}
		}
	}
	slices.SortFunc(selections, func(a, b engine.Selection) int { return cmp.Compare(a.ID, b.ID) })
	keys := make([]strings.Builder, len(s.classes))
	s.fam = make([]uint8, len(s.classes))
	s.base = make([]string, len(s.classes))
	for c, members := range s.classes {
		s.base[c], s.fam[c] = classBase(members, s.relative)
		keys[c].WriteString(s.base[c])
		keys[c].WriteByte('|')
	}
	for _, sel := range selections {
		for _, c := range s.selectionClasses(sel) {
			keys[c].WriteString(strconv.Itoa(int(sel.ID)))
			keys[c].WriteByte(',')
		}
	}
	for c, members := range s.classes {
		keys[c].WriteByte('|')
		for fam, like := range familyAddr {
			ip, ok := members[0].IP(like)
			for i, b := range blocks {
				if ok && b.Contains(ip) {
					keys[c].WriteString(strconv.Itoa(fam) + ":" + strconv.Itoa(i) + ",")
				}
			}
		}
	}
	s.groupOf = make([]int32, len(s.classes))
	ids := map[string]int32{}
	for c := range s.classes {
		k := keys[c].String()
		g, ok := ids[k]
		if !ok {
			g = int32(len(s.groupFam))
			ids[k] = g
			s.groupFam = append(s.groupFam, s.fam[c])
			s.groupBase = append(s.groupBase, s.base[c])
		}
		s.groupOf[c] = g
	}
	all := make([]int32, len(s.classes))
	for c := range all {
		all[c] = int32(c)
	}
	s.allGroups = s.histogramOf(all)
}

// portReps cuts each protocol's port space at every bound a rule names and
// around every declared container port, and returns the first port of each
// piece: every port of a piece is matched by the same rules, for every pod.
func portReps(set *policy.Set, pods []*state.Pod) []l4.Port {
	cuts := map[l4.Protocol]map[int]bool{}
	for _, proto := range l4.Protocols {
		cuts[proto] = map[int]bool{1: true}
	}
	cut := func(proto l4.Protocol, first, last int) {
		if cuts[proto] != nil {
			cuts[proto][max(first, 1)] = true
			cuts[proto][last+1] = true
		}
	}
	for _, p := range set.Policies() {
		for _, rules := range p.Rules {
			for _, r := range rules {
				for _, pm := range r.Ports {
					if pm.Named == "" {
						cut(pm.Range.Proto, int(pm.Range.First), int(pm.Range.Last))
					}
				}
			}
		}
	}
	for _, p := range pods {
		for _, cp := range p.Ports {
			cut(cp.Port.Proto, int(cp.Port.Num), int(cp.Port.Num))
		}
	}
	// Declared ports first: the first flow found becomes the example, and
	// "8080/tcp" says more to a reader than "1/tcp".
	declared := map[l4.Port]bool{}
	for _, p := range pods {
		for _, cp := range p.Ports {
			declared[cp.Port] = true
		}
	}
	var out []l4.Port
	for _, proto := range l4.Protocols {
		for n := range cuts[proto] {
			if n >= 1 && n <= 65535 {
				out = append(out, l4.Port{Proto: proto, Num: uint16(n)})
			}
		}
	}
	slices.SortFunc(out, func(a, b l4.Port) int {
		if declared[a] != declared[b] {
			if declared[a] {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Num, b.Num))
	})
	return out
}

// rulePorts returns the representative ports r can match for some pod, as
// indexes into s.ports (in its order, which is lint's order of ports).
func (s *space) rulePorts(r *policy.Rule) []int {
	if ports, ok := s.portsOfRule[r]; ok {
		return ports
	}
	var out []int
	for i, port := range s.ports {
		if r.AllPorts || slices.ContainsFunc(r.Ports, func(pm policy.PortMatch) bool {
			return (pm.Named == "" && pm.Range.Contains(port)) || (pm.Named != "" && s.named[pm.Named][port])
		}) {
			out = append(out, i)
		}
	}
	s.portsOfRule[r] = out
	return out
}

// pair picks distinct members of two classes (the same class twice needs two
// members: a pod talking to itself is always allowed and says nothing), and
// the number of pod pairs the choice stands for.
func pair(a, b []*state.Pod, same bool) (*state.Pod, *state.Pod, int, bool) {
	if !same {
		return a[0], b[0], len(a) * len(b), true
	}
	if len(a) < 2 {
		return nil, nil, 0, false
	}
	return a[0], a[1], len(a) * (len(a) - 1), true
}

// flow is src -> dst on port, as the matrix builds it (Engine.PodFlow).
func (s *space) flow(src, dst *state.Pod, port l4.Port) (engine.Flow, bool) {
	return s.e.PodFlow(src, dst, port)
}

// ruleField is the path of a rule: spec.ingress[0].
func ruleField(r *policy.Rule) string {
	return "spec." + r.Dir.String() + "[" + strconv.Itoa(r.Index) + "]"
}

// peerField is the path of the rule's peer at index k: spec.ingress[0].from[1].
func peerField(r *policy.Rule, k int) string {
	list := "from"
	if r.Dir == policy.Egress {
		list = "to"
	}
	return fmt.Sprintf("%s.%s[%d]", ruleField(r), list, k)
}

// ruleName names a rule for messages: "ingress[0]" or "rule deny-all".
func ruleName(r *policy.Rule) string {
	if r.Name != "" {
		return "rule " + r.Name
	}
	return r.Label()
}

// placeOf is the place of a rule.
func placeOf(r *policy.Rule) Place { return Place{Object: r.Policy.Ref, Field: ruleField(r)} }
