package lint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/words"
)

// actionWord is a rule's action as its API spells it.
func actionWord(r *policy.Rule) string {
	if r.Action == policy.Allow && r.Policy.Kind == policy.KindClusterNetworkPolicy {
		return "Accept"
	}
	return r.Action.String()
}

// firstMatch is the first rule of rules that matches f.
func (l *linter) firstMatch(rules []*policy.Rule, f engine.Flow) *policy.Rule {
	for _, r := range rules {
		if l.e.RuleMatches(r, f) {
			return r
		}
	}
	return nil
}

// adminRule is engine.AdminRule for the flow f of cell c on space.ports[port],
// which holds for every flow of the cell. Many rules ask about the same
// subject group and outcome class (every rule of a namespace that admits
// another), so the answers are kept per cell key, one slot per port.
func (l *linter) adminRule(f engine.Flow, dir policy.Direction, c cell, port int) *policy.Rule {
	if c.sg < 0 {
		return l.e.AdminRule(f, dir)
	}
	k := adminKey{sg: c.sg, fam: c.fam, oc: c.oc, self: c.sc == c.pc, dir: dir}
	if k != l.lastAdmin || l.lastRules == nil {
		rules, ok := l.adminRules[k]
		if !ok {
			rules = make([]*policy.Rule, len(l.space.ports))
			for i := range rules {
				rules[i] = notAsked
			}
			l.adminRules[k] = rules
		}
		l.lastAdmin, l.lastRules = k, rules
	}
	r := l.lastRules[port]
	if r == notAsked {
		r = l.e.AdminRule(f, dir)
		l.lastRules[port] = r
	}
	return r
}

// notAsked marks the ports adminRule has no answer for yet.
var notAsked = &policy.Rule{}

// adminKey is the cells adminRule keeps answers for. A class towards
// itself has its own: its peer is another member, whose ports may differ.
type adminKey struct {
	sg, fam, oc int
	self        bool
	dir         policy.Direction
}

// priorityOverlaps reports admin- and baseline-tier policies of equal
// priority whose rules match a common flow: the API leaves their order
// undefined, which matters only where both have something to say.
func (l *linter) priorityOverlaps() {
	for _, tier := range [][]*policy.Policy{l.set.Admin, l.set.Baseline} {
		for i, a := range tier {
			for _, b := range tier[i+1:] {
				if b.Priority != a.Priority {
					break
				}
				l.priorityPair(a, b)
			}
		}
	}
}

func (l *linter) priorityPair(a, b *policy.Policy) {
	common := intersect(l.subjectClasses(a), l.subjectClasses(b))
	var shared, conflicting int
	var ex, conflict example
	var exampleRules, conflictRules [2]*policy.Rule
	all := [2]peerSet{{all: true, key: "all"}, {all: true, key: "all"}}
	for di, d := range policy.Directions {
		if len(a.Rules[d]) == 0 || len(b.Rules[d]) == 0 {
			continue
		}
		ports := intersect(l.portsOf(a.Rules[d]), l.portsOf(b.Rules[d]))
		// The answers depend on which rules of both policies match a peer.
		rules := append(slices.Clip(a.Rules[d]), b.Rules[d]...)
		q := question{dir: d, rules: func(subjectGroup) (string, []*policy.Rule) {
			return "overlap " + a.Ref.String() + " " + b.Ref.String(), rules
		}}
		l.cells(q, common, all, func(c cell) bool {
			f, ok := l.space.cellFlow(c, d)
			if !ok {
				return true
			}
			for _, pi := range ports {
				f.Port = l.space.ports[pi]
				ra, rb := l.firstMatch(a.Rules[d], f), l.firstMatch(b.Rules[d], f)
				if ra == nil || rb == nil {
					continue
				}
				at := c.at(di, pi)
				shared += c.weight
				if ex.offer(f, at) {
					exampleRules = [2]*policy.Rule{ra, rb}
				}
				if ra.Action != rb.Action {
					conflicting += c.weight
					if conflict.offer(f, at) {
						conflictRules = [2]*policy.Rule{ra, rb}
					}
				}
			}
			return true
		})
	}
	if shared == 0 {
		return
	}
	f := Finding{Severity: Info, Code: CodePriorityOverlap, Object: b.Ref, Origin: b.Origin, Field: "spec.priority",
		Hint: fmt.Sprintf("give %s or %s another priority, so that the intended one comes first everywhere", a.Name, b.Name)}
	rules, flow := exampleRules, &ex
	if conflicting > 0 {
		f.Severity, rules, flow = Error, conflictRules, &conflict
		f.Message = fmt.Sprintf("same priority (%d) as %s, and they disagree on %s: %s is matched by %s %s (%s) and by this policy's %s (%s); the API leaves their order undefined (netpol applies %s first), so the verdict depends on the implementation",
			a.Priority, a.Ref, words.CountAs(conflicting, "flow", "flows"), flow, a.Name, ruleName(rules[0]), actionWord(rules[0]), ruleName(rules[1]), actionWord(rules[1]), a.Name)
	} else {
		f.Message = fmt.Sprintf("same priority (%d) as %s, and both match %s (e.g. %s: %s %s and this policy's %s, both %s); they agree on all of them, so their undefined order does not change a verdict today",
			a.Priority, a.Ref, words.CountAs(shared, "flow", "flows"), flow, a.Name, ruleName(rules[0]), ruleName(rules[1]), actionWord(rules[0]))
	}
	f.Example = flow.finding()
	f.Related = []Place{placeOf(rules[0]), placeOf(rules[1])}
	l.add(f)
}

func toFlow(f engine.Flow) string { return exampleOf(f).String() }

// portsOf is the union of the representative ports of rules, as indexes
// into space.ports, in its order.
func (l *linter) portsOf(rules []*policy.Rule) []int {
	var out []int
	for i := range l.space.ports {
		for _, r := range rules {
			if _, ok := slices.BinarySearch(l.space.rulePorts(r), i); ok {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

// intersect is the common elements of two sorted lists.
func intersect(a, b []int) []int {
	var out []int
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return out
}

// overrides reports NetworkPolicy rules whose flows an admin rule decides
// before the NetworkPolicy tier is reached: the developer's rule has no say
// there. It asks the engine which admin rule decides each flow (the first
// step of the flow's trace).
func (l *linter) overrides() {
	for _, p := range l.set.NetworkPolicies {
		subjects := l.subjectClasses(p)
		for _, d := range policy.Directions {
			if !p.Isolates[d] {
				continue
			}
			for _, r := range p.Rules[d] {
				l.override(r, subjects)
			}
		}
	}
}

func (l *linter) override(r *policy.Rule, subjects []int) {
	total, decided := 0, 0
	byRule := map[*policy.Rule]int{}
	first := map[*policy.Rule]pos{}
	var ex example
	denies := false
	// The answers depend on the admin rules of the subject's admin policies.
	q := question{dir: r.Dir, withAdmin: true, rules: func(sg subjectGroup) (string, []*policy.Rule) {
		var rules []*policy.Rule
		for _, p := range l.adminLists[sg.admins] {
			rules = append(rules, p.Rules[r.Dir]...)
		}
		return "admin " + strconv.Itoa(sg.admins), rules
	}}
	l.ruleFlows(r, subjects, q, func(f engine.Flow, c cell, port int) bool {
		total += c.weight
		ar := l.adminRule(f, r.Dir, c, port)
		if ar == nil || ar.Action == policy.Pass {
			return true
		}
		decided += c.weight
		at := c.at(0, port)
		if p, ok := first[ar]; !ok || at.before(p) {
			first[ar] = at
		}
		byRule[ar] += c.weight
		ex.offer(f, at)
		denies = denies || ar.Action == policy.Deny
		return true
	})
	// The admin rules in the order of their first flow.
	order := make([]*policy.Rule, 0, len(first))
	for ar := range first {
		order = append(order, ar)
	}
	slices.SortFunc(order, func(a, b *policy.Rule) int { return first[a].compare(first[b]) })
	if decided == 0 {
		return
	}
	var who []string
	for i, ar := range order {
		if i == 3 {
			who = append(who, fmt.Sprintf("and %d more", len(order)-3))
			break
		}
		who = append(who, fmt.Sprintf("%s %s (%s, %s)", ar.Policy.Ref, ruleName(ar), actionWord(ar), words.CountAs(byRule[ar], "flow", "flows")))
	}
	f := Finding{Severity: Info, Code: CodeAdminOverridesNP, Object: r.Policy.Ref, Origin: r.Policy.Origin, Field: ruleField(r), Example: ex.finding()}
	if decided == total {
		f.Message = fmt.Sprintf("fully overridden: admin rules decide all %s this rule matches, before NetworkPolicies are consulted: %s; e.g. %s",
			words.CountAs(total, "flow", "flows"), strings.Join(who, ", "), &ex)
	} else {
		f.Message = fmt.Sprintf("partly overridden: admin rules decide %d of the %s this rule matches, before NetworkPolicies are consulted: %s; e.g. %s",
			decided, words.CountAs(total, "flow", "flows"), strings.Join(who, ", "), &ex)
	}
	if denies {
		f.Severity = Warning
		f.Hint = "this rule allows traffic an admin policy denies: ask the cluster admin for a Pass rule, or drop the rule"
	} else {
		f.Hint = "an admin policy already allows this traffic, whatever this rule says"
	}
	for _, ar := range order {
		f.Related = append(f.Related, placeOf(ar))
	}
	l.add(f)
}

// shadowed reports rules whose every flow an earlier rule of the same
// policy matches. In an admin policy the earlier rule decides, so a later
// rule with another action never fires; in a NetworkPolicy rules are a
// union, so the later rule only adds nothing.
func (l *linter) shadowed() {
	for _, p := range l.set.Policies() {
		subjects := l.subjectClasses(p)
		if len(subjects) == 0 {
			continue
		}
		for _, d := range policy.Directions {
			if !l.e.Counts(p, d) {
				continue // a NetworkPolicy's rules where it does not isolate
			}
			for i, r := range p.Rules[d] {
				if i > 0 {
					l.shadow(r, p.Rules[d][:i], subjects)
				}
			}
		}
	}
}

func (l *linter) shadow(r *policy.Rule, earlier []*policy.Rule, subjects []int) {
	total := 0
	covered := true
	var by []*policy.Rule
	var ex example
	match := func(f engine.Flow, c cell, port int) bool {
		total += c.weight
		first := l.firstMatch(earlier, f)
		if first == nil {
			covered = false
			return false
		}
		if !slices.Contains(by, first) {
			by = append(by, first)
		}
		ex.offer(f, c.at(0, port))
		return true
	}
	q := question{dir: r.Dir}
	if r.Policy.Tier != policy.TierNetworkPolicy {
		// The answers depend on the earlier rules and r.
		rules := append(slices.Clip(earlier), r)
		q.rules = func(subjectGroup) (string, []*policy.Rule) { return "shadow " + placeOf(r).String(), rules }
	} else {
		// NetworkPolicy rules' selections are not in the peer groups.
		q.pairs = true
	}
	l.ruleFlows(r, subjects, q, match)
	if total == 0 || !covered {
		return
	}
	slices.SortFunc(by, func(a, b *policy.Rule) int { return a.Index - b.Index })
	var names []string
	differs := false
	for _, e := range by {
		names = append(names, e.Label())
		differs = differs || e.Action != r.Action
	}
	f := Finding{Severity: Info, Code: CodeRuleShadowed, Object: r.Policy.Ref, Origin: r.Policy.Origin, Field: ruleField(r), Example: ex.finding()}
	switch {
	case r.Policy.Tier == policy.TierNetworkPolicy:
		f.Message = fmt.Sprintf("adds nothing: %s already %s all %s this rule matches (e.g. %s)", strings.Join(names, ", "), verb(len(names), "allows", "allow"), words.CountAs(total, "flow", "flows"), &ex)
		f.Hint = "drop the rule, or widen it if it was meant to allow more"
	case differs:
		f.Severity = Warning
		f.Message = fmt.Sprintf("never fires: earlier %s %s all %s this rule matches and %s first (e.g. %s is decided by %s), so its %s never applies",
			rulesWord(names), verb(len(names), "matches", "match"), words.CountAs(total, "flow", "flows"), verb(len(names), "decides", "decide"), &ex, ruleName(by[0]), actionWord(r))
		f.Hint = "move the rule above the rules that shadow it, or narrow them"
	default:
		f.Message = fmt.Sprintf("redundant: earlier %s %s all %s this rule matches with the same action (e.g. %s)", rulesWord(names), verb(len(names), "matches", "match"), words.CountAs(total, "flow", "flows"), &ex)
		f.Hint = "drop the rule, or narrow the earlier ones if it was meant to apply"
	}
	for _, e := range by {
		f.Related = append(f.Related, placeOf(e))
	}
	l.add(f)
}

func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// rulesWord names rules by label: "rule deny-all", "rules ingress[0], ingress[1]".
func rulesWord(labels []string) string {
	return verb(len(labels), "rule ", "rules ") + strings.Join(labels, ", ")
}

// example keeps the best example flow offered: the first one, in lint's
// order, unless one is on a port its destination declares (a reader knows
// 8080/tcp of a web pod, not 1/tcp): then the first such one.
type example struct {
	flow engine.Flow
	at   pos
	decl bool
	ok   bool
}

// offer keeps f, at position at, if it is better, and reports whether it
// did.
func (e *example) offer(f engine.Flow, at pos) bool {
	d := declared(f)
	if e.ok && (e.decl && !d || e.decl == d && !at.before(e.at)) {
		return false
	}
	e.flow, e.at, e.decl, e.ok = f, at, d, true
	return true
}

func (e *example) finding() *Flow { return exampleOf(e.flow) }

func (e *example) String() string { return toFlow(e.flow) }

func declared(f engine.Flow) bool {
	if f.Dst.Pod == nil {
		return false
	}
	return slices.ContainsFunc(f.Dst.Pod.Ports, func(cp state.ContainerPort) bool { return cp.Port == f.Port })
}
