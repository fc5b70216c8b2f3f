package lint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
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
	for _, d := range policy.Directions {
		if len(a.Rules[d]) == 0 || len(b.Rules[d]) == 0 {
			continue
		}
		ports := intersectPorts(l.portsOf(a.Rules[d]), l.portsOf(b.Rules[d]))
		for _, sc := range common {
			l.space.visit(sc, d, ports, func(f engine.Flow, w int) bool {
				ra, rb := l.firstMatch(a.Rules[d], f), l.firstMatch(b.Rules[d], f)
				if ra == nil || rb == nil {
					return true
				}
				shared += w
				if ex.offer(f) {
					exampleRules = [2]*policy.Rule{ra, rb}
				}
				if ra.Action != rb.Action {
					conflicting += w
					if conflict.offer(f) {
						conflictRules = [2]*policy.Rule{ra, rb}
					}
				}
				return true
			})
		}
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
			a.Priority, a.Ref, plural(conflicting, "flow", "flows"), flow, a.Name, ruleName(rules[0]), actionWord(rules[0]), ruleName(rules[1]), actionWord(rules[1]), a.Name)
	} else {
		f.Message = fmt.Sprintf("same priority (%d) as %s, and both match %s (e.g. %s: %s %s and this policy's %s, both %s); they agree on all of them, so their undefined order does not change a verdict today",
			a.Priority, a.Ref, plural(shared, "flow", "flows"), flow, a.Name, ruleName(rules[0]), ruleName(rules[1]), actionWord(rules[0]))
	}
	f.Example = flow.finding()
	f.Related = []Place{placeOf(rules[0]), placeOf(rules[1])}
	l.add(f)
}

func toFlow(f engine.Flow) string { return exampleOf(f).String() }

// portsOf is the union of the representative ports of rules.
func (l *linter) portsOf(rules []*policy.Rule) []l4.Port {
	var out []l4.Port
	for _, port := range l.space.ports {
		for _, r := range rules {
			if slices.Contains(l.space.rulePorts(r), port) {
				out = append(out, port)
				break
			}
		}
	}
	return out
}

func intersectPorts(a, b []l4.Port) []l4.Port {
	var out []l4.Port
	for _, p := range a {
		if slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
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
	var order []*policy.Rule
	var ex example
	denies := false
	l.ruleFlows(r, subjects, func(f engine.Flow, w int) bool {
		total += w
		ar := l.e.AdminRule(f, r.Dir)
		if ar == nil || ar.Action == policy.Pass {
			return true
		}
		decided += w
		if byRule[ar] == 0 {
			order = append(order, ar)
		}
		byRule[ar] += w
		ex.offer(f)
		denies = denies || ar.Action == policy.Deny
		return true
	})
	if decided == 0 {
		return
	}
	var who []string
	for i, ar := range order {
		if i == 3 {
			who = append(who, fmt.Sprintf("and %d more", len(order)-3))
			break
		}
		who = append(who, fmt.Sprintf("%s %s (%s, %s)", ar.Policy.Ref, ruleName(ar), actionWord(ar), plural(byRule[ar], "flow", "flows")))
	}
	f := Finding{Severity: Info, Code: CodeAdminOverridesNP, Object: r.Policy.Ref, Origin: r.Policy.Origin, Field: ruleField(r), Example: ex.finding()}
	if decided == total {
		f.Message = fmt.Sprintf("fully overridden: admin rules decide all %s this rule matches, before NetworkPolicies are consulted: %s; e.g. %s",
			plural(total, "flow", "flows"), strings.Join(who, ", "), &ex)
	} else {
		f.Message = fmt.Sprintf("partly overridden: admin rules decide %d of the %s this rule matches, before NetworkPolicies are consulted: %s; e.g. %s",
			decided, plural(total, "flow", "flows"), strings.Join(who, ", "), &ex)
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
			if p.Tier == policy.TierNetworkPolicy && !p.Isolates[d] {
				continue
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
	l.ruleFlows(r, subjects, func(f engine.Flow, w int) bool {
		total += w
		first := l.firstMatch(earlier, f)
		if first == nil {
			covered = false
			return false
		}
		if !slices.Contains(by, first) {
			by = append(by, first)
		}
		ex.offer(f)
		return true
	})
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
		f.Message = fmt.Sprintf("adds nothing: %s already %s all %s this rule matches (e.g. %s)", strings.Join(names, ", "), verb(len(names), "allows", "allow"), plural(total, "flow", "flows"), &ex)
		f.Hint = "drop the rule, or widen it if it was meant to allow more"
	case differs:
		f.Severity = Warning
		f.Message = fmt.Sprintf("never fires: earlier %s %s all %s this rule matches and %s first (e.g. %s is decided by %s), so its %s never applies",
			rulesWord(names), verb(len(names), "matches", "match"), plural(total, "flow", "flows"), verb(len(names), "decides", "decide"), &ex, ruleName(by[0]), actionWord(r))
		f.Hint = "move the rule above the rules that shadow it, or narrow them"
	default:
		f.Message = fmt.Sprintf("redundant: earlier %s %s all %s this rule matches with the same action (e.g. %s)", rulesWord(names), verb(len(names), "matches", "match"), plural(total, "flow", "flows"), &ex)
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

// example keeps the best example flow offered: the first one, unless a
// later one is on a port its destination declares (a reader knows 8080/tcp
// of a web pod, not 1/tcp).
type example struct {
	flow engine.Flow
	ok   bool
}

// offer keeps f if it is better, and reports whether it did.
func (e *example) offer(f engine.Flow) bool {
	if e.ok && (declared(e.flow) || !declared(f)) {
		return false
	}
	e.flow, e.ok = f, true
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
