package lint

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

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
	out      []Finding
}

func newLinter(e *engine.Engine) *linter {
	return &linter{e: e, set: e.Policies(), space: newSpace(e), subjects: map[*policy.Policy][]int{}}
}

func (l *linter) add(f Finding) { l.out = append(l.out, f) }

// subjectClasses returns the classes of the pods p selects. A class is
// either wholly selected or not at all: subject selectors are part of what
// makes pods one class.
func (l *linter) subjectClasses(p *policy.Policy) []int {
	if cs, ok := l.subjects[p]; ok {
		return cs
	}
	var cs []int
	for _, pod := range l.e.Members(p) {
		if c := l.space.classOf[pod.ID]; c >= 0 && !slices.Contains(cs, c) {
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
}

func newSpace(e *engine.Engine) *space {
	c := e.Cluster()
	var pods []*state.Pod
	for _, p := range c.Pods {
		if !p.HostNetwork && len(p.IPs) > 0 {
			pods = append(pods, p)
		}
	}
	s := &space{e: e, classes: e.ClassMembers(pods), classOf: make([]int, len(c.Pods))}
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

// rulePorts returns the representative ports r can match for some pod.
func (s *space) rulePorts(r *policy.Rule) []l4.Port {
	if r.AllPorts {
		return s.ports
	}
	var out []l4.Port
	for _, port := range s.ports {
		for _, pm := range r.Ports {
			if (pm.Named == "" && pm.Range.Contains(port)) || (pm.Named != "" && s.named[pm.Named][port]) {
				out = append(out, port)
				break
			}
		}
	}
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

// visit calls fn for every flow from or to a pod of class subject (by dir:
// egress flows leave it, ingress flows enter it), to or from every class, on
// every port of ports, with the number of pod pairs the flow stands for.
// fn returns false to stop.
func (s *space) visit(subject int, dir policy.Direction, ports []l4.Port, fn func(f engine.Flow, weight int) bool) {
	for peer := range s.classes {
		a, b, weight, ok := pair(s.classes[subject], s.classes[peer], subject == peer)
		if !ok {
			continue
		}
		src, dst := a, b
		if dir == policy.Ingress {
			src, dst = b, a
		}
		f, ok := s.flow(src, dst, l4.Port{})
		if !ok {
			continue
		}
		for _, port := range ports {
			f.Port = port
			if !fn(f, weight) {
				return
			}
		}
	}
}

// ruleFlows calls fn for every flow r matches, from the pods of the given
// subject classes; fn returns false to stop.
func (l *linter) ruleFlows(r *policy.Rule, subjects []int, fn func(f engine.Flow, weight int) bool) {
	ports := l.space.rulePorts(r)
	stopped := false
	for _, sc := range subjects {
		l.space.visit(sc, r.Dir, ports, func(f engine.Flow, weight int) bool {
			if l.e.RuleMatches(r, f) && !fn(f, weight) {
				stopped = true
			}
			return !stopped
		})
		if stopped {
			return
		}
	}
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

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
