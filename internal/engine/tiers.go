package engine

import (
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/words"
)

// The tiers are one ordered list (tiers, below) that every consumer walks:
// Decide with its trace, Allowed, the matrices and the port masks through
// walk, and Program, which lays the same stages out as data for the kernel.
// Each tier answers, per connection, as kube-network-policies' evaluators
// do: accept, deny, or leave it to the next tier; after the last tier the
// default allows. In the engine a new tier is an entry of the list and a
// new action a case of outcomeOf; the kernel's side (compile's action, the
// nft renderer's chains) says them again in its own terms, and
// TestIRDecidesLikeEngine holds the two together.

// Outcome is a tier's answer for a connection in one direction.
type Outcome uint8

const (
	// Next leaves the connection to the next tier (a Pass, or nothing in
	// the tier decided it); after the last tier the default allows.
	Next Outcome = iota
	Accept
	Deny
)

func (o Outcome) String() string {
	switch o {
	case Accept:
		return "Accept"
	case Deny:
		return "Deny"
	}
	return "Next"
}

// outcomeOf is what a matching rule's action does: Pass leaves the tier
// (the admin tier for the NetworkPolicy tier, a ClusterNetworkPolicy's
// baseline tier for the default). An action netpol does not know denies.
func outcomeOf(a policy.Action) Outcome {
	switch a {
	case policy.Allow:
		return Accept
	case policy.Pass:
		return Next
	}
	return Deny
}

// tierSpec is how one tier decides.
type tierSpec struct {
	tier policy.Tier
	// isolating: the tier's policies decide only where one of them
	// isolates the subject in the direction (NetworkPolicy: implicit
	// isolation), and then the allow rules of the isolating ones are a
	// union and the tier denies what they leave. Otherwise every policy of
	// the tier that selects the subject has its rules walked in order, and
	// the tier leaves what they leave to the next one. (An isolating
	// tier's rules only allow: a Program ends at the tier that denies its
	// rest, as a kernel table ends in its default.)
	isolating bool
	word      string // names the tier's policies in the trace
}

// tiers is the walk, in order (DESIGN.md, "The one tiered model").
var tiers = [...]tierSpec{
	{tier: policy.TierAdmin, word: "admin"},
	{tier: policy.TierNetworkPolicy, isolating: true},
	{tier: policy.TierBaseline, word: "baseline"},
}

// stage is one tier as it applies to one side of a connection.
type stage struct {
	*tierSpec
	dir policy.Direction
	// policies are the tier's policies that select the subject, in order;
	// none when an isolating tier does not isolate it.
	policies []*compiled
	// rest is what the tier does with what none of its rules decides: Next,
	// or Deny when it isolates the subject.
	rest Outcome
	// all: the rules of every policy count. In an isolating tier only the
	// isolating policies' do, unless isolation is the namespace's (the
	// v1beta1 proposal, Options.LegacyNamespaceIsolation).
	all bool
}

// tierList is the policies of one tier that select a pod, in evaluation
// order, and whether one of them isolates the pod in each direction (for
// an isolating tier), worked out once so that the walk takes its stages
// without a scan. Pods whose subjects of the tier are the same share one
// (applicable).
type tierList struct {
	tier     int // in tiers
	policies []*compiled
	isolates [2]bool // by policy.Direction
}

func newTierList(t int, ps []*compiled) *tierList {
	l := &tierList{tier: t, policies: ps}
	if tiers[t].isolating {
		for _, p := range ps {
			for _, d := range policy.Directions {
				l.isolates[d] = l.isolates[d] || p.Isolates[d]
			}
		}
	}
	return l
}

// podTiers are the lists of the policies that select a pod, one for each
// tier of the walk, in its order.
type podTiers [numTiers]*tierList

// stage returns tier i of the walk as it applies to the dir side of
// subject, whose policies are lists.
func (e *Engine) stage(i int, lists podTiers, subject *state.Pod, dir policy.Direction) stage {
	st := stage{tierSpec: &tiers[i], dir: dir, policies: lists[i].policies, all: e.allCount(&tiers[i], dir)}
	if st.isolating {
		if st.all && subject.Namespace.LegacyIngressIsolation || !st.all && lists[i].isolates[dir] {
			st.rest = Deny
		} else {
			st.policies = nil
		}
	}
	return st
}

// counts reports whether p's rules decide in the stage.
func (st *stage) counts(p *compiled) bool { return st.all || p.Isolates[st.dir] }

// allCount reports whether the rules of every policy of tier spec that
// selects a pod decide its dir side: in a tier that is not isolating, and
// in an isolating one where isolation is the namespace's (the v1beta1
// proposal, Options.LegacyNamespaceIsolation, for ingress). Otherwise only
// the rules of the policies that isolate the direction do (stage.counts).
func (e *Engine) allCount(spec *tierSpec, dir policy.Direction) bool {
	return !spec.isolating || e.opts.LegacyNamespaceIsolation && dir == policy.Ingress
}

// Counts reports whether p's rules in dir can decide for the pods it
// selects, as the walk counts them: every admin policy's; a
// NetworkPolicy's in the directions it isolates (every one's ingress under
// Options.LegacyNamespaceIsolation). For the front ends that reason about
// rules (diff, lint) without deciding flows.
func (e *Engine) Counts(p *policy.Policy, dir policy.Direction) bool {
	return e.allCount(&tiers[tierOf(p.Tier)], dir) || p.Isolates[dir]
}

// Isolated reports whether an isolating tier (NetworkPolicy) denies what
// its rules leave of pod's dir side, as the walk does: one of its policies
// isolates the pod, or under Options.LegacyNamespaceIsolation its
// namespace does for ingress. Host-network pods and pods of another
// snapshot are never isolated.
func (e *Engine) Isolated(pod *state.Pod, dir policy.Direction) bool {
	if !e.ours(pod) {
		return false
	}
	lists := e.applicable(pod)
	for i := range tiers {
		if tiers[i].isolating && e.stage(i, lists, pod, dir).rest == Deny {
			return true
		}
	}
	return false
}

// isolatedBy names what makes the stage deny its rest: the isolating
// policies, or the subject's namespace.
func (st *stage) isolatedBy(subject *state.Pod) []policy.Ref {
	if st.all {
		return []policy.Ref{{Kind: policy.KindLegacyNamespaceIsolation, Name: subject.Namespace.Name}}
	}
	var refs []policy.Ref
	for _, p := range st.policies {
		if p.Isolates[st.dir] {
			refs = append(refs, p.Ref)
		}
	}
	return refs
}

// decide walks one stage for the ports of want (bits of m.ports): per
// port, the first rule that matches decides, by its action's outcome, and
// what no rule matches gets the stage's rest. It returns the ports
// accepted and those left to the next tier; the others are denied. With s
// it records the trace there.
func (m matcher) decide(st *stage, want uint64, s *Side) (accepted, next uint64) {
	open := want
	for _, p := range st.policies {
		if !st.counts(p) {
			continue
		}
		for _, r := range p.rules[m.dir] {
			hit := m.rule(r, open)
			if hit == 0 {
				continue
			}
			if s != nil {
				s.Steps = append(s.Steps, ruleStep(st.tier, p, r))
			}
			switch outcomeOf(r.Action) {
			case Accept:
				accepted |= hit
			case Next:
				next |= hit
			}
			if open &^= hit; open == 0 {
				return accepted, next
			}
		}
	}
	if s != nil {
		m.restStep(st, open == want, s)
	}
	if st.rest == Next {
		next |= open
	}
	return accepted, next
}

// restStep records what the stage did with the ports its rules left;
// untouched: no rule matched any port.
func (m matcher) restStep(st *stage, untouched bool, s *Side) {
	tier := st.tier.String()
	switch {
	case st.rest == Deny:
		s.Steps = append(s.Steps, Step{Tier: tier, Action: ActionDeny, IsolatedBy: st.isolatedBy(m.subject),
			Note: "the pod is isolated for " + m.dir.String() + " and no rule of the isolating policies allows this"})
	case st.isolating:
		s.Steps = append(s.Steps, Step{Tier: tier, Action: ActionNoMatch, Note: "no " + tier + " isolates the pod for " + m.dir.String()})
	case untouched && len(st.policies) > 0:
		s.Steps = append(s.Steps, Step{Tier: tier, Action: ActionNoMatch, Note: words.CountAs(len(st.policies), st.word+" policy selects", st.word+" policies select") + " the pod; no rule matched"})
	}
}
