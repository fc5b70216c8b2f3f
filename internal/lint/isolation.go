package lint

import (
	"fmt"
	"strings"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/words"
)

// dnsLabel marks the cluster DNS pods, as kube-dns and CoreDNS deploy them.
const dnsKey, dnsValue = "k8s-app", "kube-dns"

// isolation reports pods that NetworkPolicies isolate in a direction while
// allowing nothing, and pods that cannot reach cluster DNS.
func (l *linter) isolation() {
	// The NetworkPolicies that select each class, in order.
	isolating := make([][]*policy.Policy, len(l.space.classes))
	for _, p := range l.set.NetworkPolicies {
		for _, c := range l.subjectClasses(p) {
			isolating[c] = append(isolating[c], p)
		}
	}
	cutOff := make([]bool, len(l.space.classes)) // egress allows nothing
	for _, d := range policy.Directions {
		type group struct {
			by      []*policy.Policy
			classes []int
			pods    int
		}
		var groups []*group
		index := map[string]*group{}
		for c, nps := range isolating {
			var by []*policy.Policy
			for _, p := range nps {
				if p.Isolates[d] {
					by = append(by, p)
				}
			}
			if len(by) == 0 || !l.allowsNothing(c, d, by) {
				continue
			}
			if d == policy.Egress {
				cutOff[c] = true
			}
			key := refsKey(by)
			g := index[key]
			if g == nil {
				g = &group{by: by}
				index[key] = g
				groups = append(groups, g)
			}
			g.classes = append(g.classes, c)
			g.pods += len(l.space.classes[c])
		}
		for _, g := range groups {
			l.add(l.allowsNothingFinding(d, g.by, g.classes, g.pods))
		}
	}
	l.dns(cutOff)
}

func refsKey(ps []*policy.Policy) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Ref.String())
		b.WriteByte(';')
	}
	return b.String()
}

// allowsNothing reports whether no rule of the isolating policies by matches
// any flow of class c in direction d. A rule with an ipBlock peer is taken
// to allow something: it can match addresses outside the cluster.
func (l *linter) allowsNothing(c int, d policy.Direction, by []*policy.Policy) bool {
	for _, p := range by {
		for _, r := range p.Rules[d] {
			if r.AllPeers && (r.AllPorts || len(r.Ports) > 0) {
				return false
			}
			for _, peer := range r.Peers {
				if peer.Kind == policy.PeerIPBlock {
					return false
				}
			}
			matched := false
			l.ruleFlows(r, []int{c}, question{dir: d}, func(engine.Flow, cell, int) bool {
				matched = true
				return false
			})
			if matched {
				return false
			}
		}
	}
	return true
}

func (l *linter) allowsNothingFinding(d policy.Direction, by []*policy.Policy, classes []int, pods int) Finding {
	first := by[0]
	var members []*state.Pod
	for _, c := range classes {
		members = append(members, l.space.classes[c]...)
	}
	rules := 0
	for _, p := range by {
		rules += len(p.Rules[d])
	}
	f := Finding{Severity: Warning, Code: CodeIsolatedNoAllow, Object: first.Ref, Origin: first.Origin, Field: "spec." + d.String()}
	together := ""
	if len(by) > 1 {
		together = fmt.Sprintf(" (with %s)", refList(by[1:]))
		for _, p := range by[1:] {
			f.Related = append(f.Related, Place{Object: p.Ref, Field: "spec." + d.String()})
		}
	}
	what := "no rule allows anything"
	if rules > 0 {
		what = fmt.Sprintf("its %s %s no pod in the state", words.CountAs(rules, d.String()+" rule", d.String()+" rules"), verb(rules, "matches", "match"))
	}
	f.Message = fmt.Sprintf("isolates %s (%s)%s for %s and %s: all %s traffic of these pods is denied unless an admin policy allows it",
		words.CountAs(pods, "pod", "pods"), podList(members), together, d, what, d)
	if d == policy.Egress {
		f.Message += "; DNS included, so they cannot even resolve names"
	}
	if rules == 0 {
		f.Severity = Info
		f.Hint = fmt.Sprintf("a deny-all for %s: if that is not the intent, add %s rules (or another policy) for the traffic these pods need", d, d)
	} else {
		f.Hint = "the rules' selectors or ports match nothing: check them against the pods' labels and ports"
	}
	return f
}

func refList(ps []*policy.Policy) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Ref.String()
	}
	return strings.Join(names, ", ")
}

// dns reports pods whose DNS queries (53/udp to a k8s-app=kube-dns pod) are
// denied, grouped by the policy that denies them. Pods whose egress allows
// nothing at all (cutOff) are reported as such already.
func (l *linter) dns(cutOff []bool) {
	var dnsClasses []int
	for c, members := range l.space.classes {
		if members[0].Labels[dnsKey] == dnsValue {
			dnsClasses = append(dnsClasses, c)
		}
	}
	if len(dnsClasses) == 0 {
		return
	}
	type group struct {
		f    Finding
		pods int
		seen map[int]bool
	}
	var groups []*group
	index := map[string]*group{}
	port := l4.Port{Proto: l4.UDP, Num: 53}
	for c := range l.space.classes {
		for _, dc := range dnsClasses {
			src, dst, _, ok := pair(l.space.classes[c], l.space.classes[dc], c == dc)
			if !ok {
				continue
			}
			f, ok := l.space.flow(src, dst, port)
			if !ok {
				continue
			}
			v := l.e.Decide(f)
			if v.Allowed || (!v.Egress.Allowed && cutOff[c]) {
				continue
			}
			side, dir := v.Egress, policy.Egress
			if v.Egress.Allowed {
				side, dir = v.Ingress, policy.Ingress
			}
			place, why := l.decider(side, dir)
			key := place.String()
			g := index[key]
			if g == nil {
				g = &group{seen: map[int]bool{}, f: Finding{Severity: Warning, Code: CodeDNSBlocked, Object: place.Object, Origin: l.origin(place.Object),
					Field: place.Field, Example: exampleOf(f)}}
				if dir == policy.Egress {
					g.f.Message = "denies DNS (53/udp to the kube-dns pods): " + why + "; e.g. " + toFlow(f)
					g.f.Hint = "allow egress to pods labelled k8s-app=kube-dns in kube-system on 53/udp and 53/tcp"
				} else {
					g.f.Message = "keeps DNS queries (53/udp) from reaching the kube-dns pods: " + why + "; e.g. " + toFlow(f)
					g.f.Hint = "allow ingress to the kube-dns pods on 53/udp and 53/tcp from every namespace"
				}
				index[key] = g
				groups = append(groups, g)
			}
			if !g.seen[c] {
				g.seen[c] = true
				g.pods += len(l.space.classes[c])
			}
		}
	}
	for _, g := range groups {
		g.f.Message = fmt.Sprintf("%s (%s affected)", g.f.Message, words.CountAs(g.pods, "source pod", "source pods"))
		l.add(g.f)
	}
}

// decider names what denied one side of a flow, from its trace.
func (l *linter) decider(side engine.Side, dir policy.Direction) (Place, string) {
	last := side.Steps[len(side.Steps)-1]
	switch {
	case last.Policy != nil:
		field := ""
		if p := l.policy(*last.Policy); p != nil {
			for _, r := range p.Rules[dir] {
				if r.Label() == last.Rule {
					field = ruleField(r)
				}
			}
		}
		return Place{Object: *last.Policy, Field: field}, fmt.Sprintf("%s %s (%s) decides", last.Tier, last.Rule, last.Action)
	case len(last.IsolatedBy) > 0:
		refs := make([]string, len(last.IsolatedBy))
		for i, r := range last.IsolatedBy {
			refs[i] = r.String()
		}
		return Place{Object: last.IsolatedBy[0], Field: "spec." + dir.String()},
			fmt.Sprintf("the pods are isolated for %s by %s and no rule allows it", dir, strings.Join(refs, ", "))
	}
	return Place{Object: policy.Ref{Kind: "Input"}}, last.Note
}

func (l *linter) policy(ref policy.Ref) *policy.Policy { return l.policies[ref] }

func (l *linter) origin(ref policy.Ref) (o diag.Origin) {
	if p := l.policy(ref); p != nil {
		return p.Origin
	}
	return o
}
