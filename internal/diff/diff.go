// Package diff compares the pod-to-pod connectivity of two versions of a
// cluster — the engines built from OLD and NEW input — and reports what
// changes: flows gained and lost, per pair of namespaces, with the rule that
// decided each on both sides when asked. It answers "what does this pull
// request change?". It builds on engine (and state, l4) like the other front
// ends' helpers and is imported only by cli.
//
// Pods are matched by namespace/name. Only pods present on both sides are
// compared; pods present on one side only are listed as added or removed,
// since every flow of a new pod would otherwise show up as "gained" and bury
// the policy changes.
//
// The work follows what changed, not pods squared: a pod's key is its
// behaviour class in OLD together with its class in NEW, so two pods with
// the same key decide alike on both sides (joint classes); a pair of
// classes whose pods and policies are the same on both sides is not
// decided at all (unchanged.go), and the others are decided a few pairs
// per class (pairs.go), each pair on every port segment at once.
package diff

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/jsontext"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Change is how a pair of pod groups' connectivity moved.
type Change string

const (
	Gained  Change = "gained"  // some ports allowed in NEW only
	Lost    Change = "lost"    // some ports allowed in OLD only
	Changed Change = "changed" // both: the allowed ports moved
)

// Result is the difference between OLD and NEW.
type Result struct {
	Summary     Summary  `json:"summary"`
	AddedPods   []string `json:"addedPods"`   // namespace/name, in NEW only
	RemovedPods []string `json:"removedPods"` // namespace/name, in OLD only
	Groups      []Group  `json:"groups"`
	// Services are the Service ports whose reach from a namespace's pods
	// changed (all, some or none of the backends).
	Services []ServiceChange `json:"services,omitempty"`
}

// Summary counts the changes.
type Summary struct {
	Gained   int `json:"gained"`   // entries that only gain ports
	Lost     int `json:"lost"`     // entries that only lose ports
	Changed  int `json:"changed"`  // entries that gain some ports and lose others
	PodPairs int `json:"podPairs"` // source x destination pod pairs whose connectivity changed
	// The work done: pairs of joint classes decided on each port segment.
	Classes      int `json:"classes"`
	PortSegments int `json:"portSegments"`
}

// Empty reports whether nothing changed: no flow and no pod.
func (r *Result) Empty() bool {
	return len(r.Groups) == 0 && len(r.AddedPods) == 0 && len(r.RemovedPods) == 0 && len(r.Services) == 0
}

// Group is every change from pods of one namespace to pods of another (or
// the same).
type Group struct {
	From    string  `json:"fromNamespace"`
	To      string  `json:"toNamespace"`
	Entries []Entry `json:"entries"`
}

// Entry is a change that every pod of From sees towards every pod of To
// (a pod towards itself excepted: that is always allowed).
type Entry struct {
	From   []string    `json:"from"` // pod names in Group.From
	To     []string    `json:"to"`   // pod names in Group.To
	Change Change      `json:"change"`
	Gained []PortRange `json:"gained"`
	Lost   []PortRange `json:"lost"`
	// Explain holds, with Options.Explain, one decision per changed range,
	// on an example pair of pods, in OLD and in NEW.
	Explain []Explanation `json:"explain,omitempty"`
}

// PodPairs counts the source x destination pairs of e, self excluded.
func (e Entry) PodPairs(g Group) int {
	n := len(e.From) * len(e.To)
	if g.From == g.To && slices.Equal(e.From, e.To) {
		n -= len(e.From)
	}
	return n
}

// Explanation shows why some ranges changed: the verdicts, with their
// traces, on an example flow (on the first range's first port). Ranges of
// one change decided by the same rules share one explanation.
type Explanation struct {
	Ports  []PortRange    `json:"ports"`
	Change Change         `json:"change"` // Gained or Lost
	From   string         `json:"from"`   // namespace/name
	To     string         `json:"to"`
	Port   string         `json:"port"` // the port decided, e.g. 5432/tcp
	Old    engine.Verdict `json:"old"`
	New    engine.Verdict `json:"new"`
}

// PortRange is a range of ports of one protocol, 1-65535 being "any".
type PortRange struct{ l4.Range }

func (r PortRange) String() string {
	if r.First <= 1 && r.Last == 65535 {
		return "any/" + strings.ToLower(r.Proto.String())
	}
	return r.Range.String()
}

// MarshalJSON writes {"protocol": "TCP", "port": 8000, "endPort": 8100}, the
// NetworkPolicy spelling; endPort only for a range.
func (r PortRange) MarshalJSON() ([]byte, error) {
	v := struct {
		Protocol string `json:"protocol"`
		Port     uint16 `json:"port"`
		EndPort  uint16 `json:"endPort,omitempty"`
	}{Protocol: r.Proto.String(), Port: r.First}
	if r.Last != r.First {
		v.EndPort = r.Last
	}
	return jsontext.Marshal(v)
}

// Options tune Compare.
type Options struct {
	Explain bool // decide an example flow of each changed range with its trace
}

// Compare decides every pair of pods present in both old and new on every
// port segment, and reports the pairs whose verdicts differ.
func Compare(old, new *engine.Engine, opts Options) *Result {
	return compare(old, new, opts, false)
}

// compare is Compare; everyPair decides every pair of joint classes, quiet
// or not, as the reference TestQuietPairsAreUnchanged compares with.
func compare(old, new *engine.Engine, opts Options, everyPair bool) *Result {
	r := &Result{AddedPods: []string{}, RemovedPods: []string{}, Groups: []Group{}}
	var oldPods, newPods []*state.Pod // common pods, index-aligned, by key
	for _, p := range old.Cluster().Pods {
		if q := new.Cluster().Pod(p.Key()); q != nil {
			oldPods, newPods = append(oldPods, p), append(newPods, q)
		} else {
			r.RemovedPods = append(r.RemovedPods, p.Key())
		}
	}
	for _, q := range new.Cluster().Pods {
		if old.Cluster().Pod(q.Key()) == nil {
			r.AddedPods = append(r.AddedPods, q.Key())
		}
	}
	r.Services = compareServices(old, new, oldPods, newPods)
	segs := Segments(old, new)
	r.Summary.PortSegments = len(segs)
	if len(oldPods) == 0 {
		return r
	}

	// Joint classes: pods alike in OLD and alike in NEW.
	oc, nc := old.Classes(oldPods), new.Classes(newPods)
	ids := map[[2]int]int{}
	var members [][]int // joint class -> indexes into oldPods/newPods
	for i := range oldPods {
		k := [2]int{oc[i], nc[i]}
		id, ok := ids[k]
		if !ok {
			id = len(members)
			ids[k] = id
			members = append(members, nil)
		}
		members[id] = append(members[id], i)
	}
	r.Summary.Classes = len(members)

	// Pairs of joint classes whose verdicts cannot change are not decided:
	// a class is quiet as a source when one of its pods is (quiet), as a
	// destination likewise, and a pair of a quiet source class and a quiet
	// destination class stands for pairs of quiet pods, which decide alike
	// in OLD and NEW. The other classes are decided in rows (loud sources
	// towards every class) and columns (quiet sources towards loud
	// destinations), a few questions each (pairs.go).
	d := newDiffer(old, new, oldPods, newPods, members, segs)
	quietSrc, quietDst, selfQuiet := d.quiet()
	groups := map[[2]string]*Group{}
	add := func(a, b int, gained, lost []PortRange) {
		r.add(groups, oldPods, members[a], members[b], a == b, gained, lost)
	}
	if everyPair {
		for a := range members {
			for b := range members {
				d.pair(a, b, add)
			}
		}
	} else {
		var all, quietSources []int
		for c := range members {
			all = append(all, c)
			if quietSrc[c] {
				quietSources = append(quietSources, c)
			}
		}
		for c := range members {
			if !quietSrc[c] {
				d.row(c, all, quietDst, add)
			}
			if !quietDst[c] {
				d.column(c, quietSources, add)
			}
			if !selfQuiet[c] {
				d.pair(c, c, add)
			}
		}
	}
	for _, g := range groups {
		slices.SortFunc(g.Entries, func(x, y Entry) int {
			return cmp.Or(slices.Compare(x.From, y.From), slices.Compare(x.To, y.To))
		})
		r.Groups = append(r.Groups, *g)
	}
	slices.SortFunc(r.Groups, func(x, y Group) int { return cmp.Or(cmp.Compare(x.From, y.From), cmp.Compare(x.To, y.To)) })
	for gi := range r.Groups {
		g := &r.Groups[gi]
		for ei := range g.Entries {
			e := &g.Entries[ei]
			r.Summary.PodPairs += e.PodPairs(*g)
			switch e.Change {
			case Gained:
				r.Summary.Gained++
			case Lost:
				r.Summary.Lost++
			default:
				r.Summary.Changed++
			}
			if opts.Explain {
				e.Explain = explain(old, new, *g, *e)
			}
		}
	}
	return r
}

// add records the change from class src to class dst, split by namespace
// on both ends so that it lands in its namespace pairs.
func (r *Result) add(groups map[[2]string]*Group, pods []*state.Pod, src, dst []int, self bool, gained, lost []PortRange) {
	change := Changed
	switch {
	case len(lost) == 0:
		change = Gained
	case len(gained) == 0:
		change = Lost
	}
	for _, from := range byNamespace(pods, src) {
		for _, to := range byNamespace(pods, dst) {
			if self && from.ns == to.ns && len(from.names) == 1 {
				continue // one pod towards itself
			}
			k := [2]string{from.ns, to.ns}
			g := groups[k]
			if g == nil {
				g = &Group{From: from.ns, To: to.ns}
				groups[k] = g
			}
			g.Entries = append(g.Entries, Entry{From: from.names, To: to.names, Change: change,
				Gained: orEmpty(gained), Lost: orEmpty(lost)})
		}
	}
}

func orEmpty(r []PortRange) []PortRange {
	if r == nil {
		return []PortRange{}
	}
	return r
}

type nsPods struct {
	ns    string
	names []string
}

// byNamespace splits a class's members (in key order) by namespace.
func byNamespace(pods []*state.Pod, idx []int) []nsPods {
	var out []nsPods
	for _, i := range idx {
		p := pods[i]
		if len(out) == 0 || out[len(out)-1].ns != p.Namespace.Name {
			out = append(out, nsPods{ns: p.Namespace.Name})
		}
		last := &out[len(out)-1]
		last.names = append(last.names, p.Name)
	}
	return out
}

// extend adds seg to ranges, merging it into the last range when they touch.
func extend(ranges []PortRange, seg l4.Range) []PortRange {
	if n := len(ranges); n > 0 && ranges[n-1].Proto == seg.Proto && ranges[n-1].Last+1 == seg.First {
		ranges[n-1].Last = seg.Last
		return ranges
	}
	return append(ranges, PortRange{seg})
}

// Segments splits each protocol's ports 1-65535 at every boundary that a
// policy of either engine or a declared container port draws (named ports
// resolve to declared ports). No verdict can tell two ports of a segment
// apart, so its first port decides for all of it.
func Segments(engines ...*engine.Engine) []l4.Range {
	cuts := map[l4.Protocol]map[int]bool{}
	for _, p := range l4.Protocols {
		cuts[p] = map[int]bool{1: true}
	}
	cut := func(r l4.Range) {
		if c := cuts[r.Proto]; c != nil {
			c[max(int(r.First), 1)] = true
			c[int(r.Last)+1] = true
		}
	}
	for _, e := range engines {
		for _, p := range e.Policies().Policies() {
			for _, d := range policy.Directions {
				for _, rule := range p.Rules[d] {
					for _, pm := range rule.Ports {
						if pm.Named == "" {
							cut(pm.Range)
						}
					}
				}
			}
		}
		for _, pod := range e.Cluster().Pods {
			for _, cp := range pod.Ports {
				cut(l4.Range{Proto: cp.Port.Proto, First: cp.Port.Num, Last: cp.Port.Num})
			}
		}
	}
	var out []l4.Range
	for _, proto := range l4.Protocols {
		var bounds []int
		for b := range cuts[proto] {
			if b <= 65535 {
				bounds = append(bounds, b)
			}
		}
		slices.Sort(bounds)
		for i, b := range bounds {
			last := 65535
			if i+1 < len(bounds) {
				last = bounds[i+1] - 1
			}
			out = append(out, l4.Range{Proto: proto, First: uint16(b), Last: uint16(last)})
		}
	}
	return out
}

// explain decides, for each changed range of e, one example flow in old and
// in new with the full trace.
func explain(old, new *engine.Engine, g Group, e Entry) []Explanation {
	from := g.From + "/" + e.From[0]
	to := g.To + "/" + e.To[0]
	if from == to {
		to = g.To + "/" + e.To[1] // a class towards itself has two pods
	}
	var out []Explanation
	for _, c := range []struct {
		change Change
		ranges []PortRange
	}{{Gained, e.Gained}, {Lost, e.Lost}} {
		same := map[string]int{} // the deciders, in words -> index in out
		for _, pr := range c.ranges {
			port := l4.Port{Proto: pr.Proto, Num: pr.First}
			x := Explanation{Ports: []PortRange{pr}, Change: c.change, From: from, To: to, Port: port.String(),
				Old: decide(old, from, to, port), New: decide(new, from, to, port)}
			k := Describe(x.Old) + "\n" + Describe(x.New)
			if i, ok := same[k]; ok {
				out[i].Ports = append(out[i].Ports, pr)
				continue
			}
			same[k] = len(out)
			out = append(out, x)
		}
	}
	return out
}

// decide builds the flow as the engine's matrix does (Engine.PodFlow) and
// decides it.
func decide(e *engine.Engine, from, to string, port l4.Port) engine.Verdict {
	f, ok := e.PodFlow(e.Cluster().Pod(from), e.Cluster().Pod(to), port)
	if !ok {
		note := "the pods have no address family in common"
		return engine.Verdict{Note: note, Egress: engine.Side{Note: note, Steps: []engine.Step{}}, Ingress: engine.Side{Note: note, Steps: []engine.Step{}}}
	}
	return e.Decide(f)
}

// Decider says in one line what decided a side: its deciding step (the
// last), or why no policy could apply.
func Decider(s engine.Side) string {
	if len(s.Steps) == 0 {
		return s.Note
	}
	st := s.Steps[len(s.Steps)-1]
	switch {
	case st.Policy != nil:
		tier := ""
		if !strings.HasPrefix(st.Policy.Kind, st.Tier) { // ClusterNetworkPolicy: either tier
			tier = " (" + st.Tier + " tier)"
		}
		return st.Policy.String() + " rule " + st.Rule + tier + ": " + st.Action
	case len(st.IsolatedBy) > 0:
		names := make([]string, len(st.IsolatedBy))
		for i, r := range st.IsolatedBy {
			names[i] = r.String()
		}
		return st.Tier + ": isolated by " + strings.Join(names, ", ") + ", no rule allows it: " + st.Action
	}
	return st.Tier + ": " + st.Action + " (" + st.Note + ")"
}

// Describe is a verdict in one line: the decision, then each side's decider.
func Describe(v engine.Verdict) string {
	word := "denied"
	if v.Allowed {
		word = "allowed"
	}
	if v.Note != "" {
		return word + " (" + v.Note + ")"
	}
	return word + "; egress: " + Decider(v.Egress) + "; ingress: " + Decider(v.Ingress)
}

// FormatPorts writes ranges for a person: "all ports" when every port of
// every protocol is there, "any/tcp" for a whole protocol, and "any/tcp
// except 8443" when a protocol lacks only a few single ports, which is how
// a policy that tightens to one port reads best.
func FormatPorts(ranges []PortRange) string {
	var parts []string
	whole := 0
	for i := 0; i < len(ranges); {
		j := i
		for j < len(ranges) && ranges[j].Proto == ranges[i].Proto {
			j++
		}
		rs := ranges[i:j]
		proto := strings.ToLower(rs[0].Proto.String())
		var gaps []string
		for k := 1; k < len(rs); k++ {
			if rs[k].First-rs[k-1].Last != 2 { // a gap of exactly one port
				gaps = nil
				break
			}
			gaps = append(gaps, strconv.Itoa(int(rs[k].First-1)))
		}
		switch {
		case len(rs) == 1 && rs[0].First <= 1 && rs[0].Last == 65535:
			parts = append(parts, "any/"+proto)
			whole++
		case rs[0].First <= 1 && rs[len(rs)-1].Last == 65535 && len(gaps) > 0 && len(gaps) <= 3:
			parts = append(parts, "any/"+proto+" except "+strings.Join(gaps, ","))
		default:
			for _, r := range rs {
				parts = append(parts, r.String())
			}
		}
		i = j
	}
	if whole == len(l4.Protocols) && len(parts) == whole {
		return "all ports"
	}
	return strings.Join(parts, ", ")
}
