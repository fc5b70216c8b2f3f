package engine

import (
	"sync"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// ClassMembers is Classes as lists of pods: the members of each class, in
// order of their first member in pods. A verdict about one member, as source
// or as destination, holds for every other member (a pod talking to itself
// aside).
func (e *Engine) ClassMembers(pods []*state.Pod) [][]*state.Pod {
	var out [][]*state.Pod
	for i, c := range e.Classes(pods) {
		if c == len(out) {
			out = append(out, nil)
		}
		out[c] = append(out[c], pods[i])
	}
	return out
}

// rulesByPolicyRule finds the compiled form of a policy rule. Only lint
// asks, so the agent, which builds an engine per change, never pays for it.
type rulesByPolicyRule struct {
	once sync.Once
	m    map[*policy.Rule]compiledRule
}

func (r *rulesByPolicyRule) get(e *Engine) map[*policy.Rule]compiledRule {
	r.once.Do(func() {
		r.m = map[*policy.Rule]compiledRule{}
		for _, p := range e.policies {
			for _, rules := range p.rules {
				for _, cr := range rules {
					r.m[cr.Rule] = cr
				}
			}
		}
	})
	return r.m
}

// compiledByPolicy finds the compiled form of a policy: lint asks for the
// members of every policy, and a scan of the policies per question made
// that quadratic in their number.
type compiledByPolicy struct {
	once sync.Once
	m    map[*policy.Policy]*compiled
}

func (c *compiledByPolicy) get(e *Engine) map[*policy.Policy]*compiled {
	c.once.Do(func() {
		c.m = make(map[*policy.Policy]*compiled, len(e.policies))
		for _, cp := range e.policies {
			c.m[cp.Policy] = cp
		}
	})
	return c.m
}

// Selection is what one pod peer of a rule selects.
type Selection struct {
	// ID is shared by the peers of every rule that select alike (the same
	// namespace and pod selectors), so that a caller can do its work once
	// per selection instead of once per peer.
	ID int32
	// Pods are the pod IDs selected, ascending; never host-network pods. A
	// peer whose namespaces are relative to the subject pod (KEP-2091
	// related, sameLabels, notSameLabels) lists the pods of every
	// namespace: which of them it matches depends on the subject.
	Pods []int32
}

// PeerSelection returns what peer k of rule r selects; ok is false when the
// peer is not a pod peer or r is not a rule of the engine's policies.
func (e *Engine) PeerSelection(r *policy.Rule, k int) (s Selection, ok bool) {
	cr, found := e.rules.get(e)[r]
	if !found || k < 0 || k >= len(cr.peers) || cr.peers[k].Kind != policy.PeerPods {
		return Selection{}, false
	}
	atom := cr.peers[k].atom
	return Selection{ID: atom, Pods: e.members(atom)}, true
}

// RuleMatches reports whether rule r, on its own, matches f: its peers and
// ports, as seen from the pod on r's side of the flow (the source for an
// egress rule, the destination for an ingress rule). It does not ask whether
// r's policy selects that pod, nor what other rules say; lint uses it to
// compare rules with each other. A rule of another policy set matches nothing.
func (e *Engine) RuleMatches(r *policy.Rule, f Flow) bool {
	cr, m, ok := e.ruleMatcher(r, f)
	return ok && m.rule(cr, 1) != 0
}

// PeerMatches reports whether r's peers, on their own, match the other end
// of f as seen from the pod on r's side: RuleMatches without the ports.
// diff asks it to find the pods a rule cannot tell apart.
func (e *Engine) PeerMatches(r *policy.Rule, f Flow) bool {
	cr, m, ok := e.ruleMatcher(r, f)
	return ok && m.peers(cr)
}

// ruleMatcher returns r's compiled form and the matcher of f from r's side
// (the source for an egress rule, the destination for an ingress rule); ok
// is false when r is not a rule of the engine's or that side is no pod
// that policies select.
func (e *Engine) ruleMatcher(r *policy.Rule, f Flow) (compiledRule, matcher, bool) {
	cr, ok := e.rules.get(e)[r]
	if !ok {
		return cr, matcher{}, false
	}
	subject, peer := f.Dst, f.Src
	if r.Dir == policy.Egress {
		subject, peer = f.Src, f.Dst
	}
	pod := subject.policyPod()
	if pod == nil {
		return cr, matcher{}, false
	}
	return cr, matcher{e: e, dir: r.Dir, subject: pod, peer: peer, ports: []l4.Port{f.Port}, dst: f.Dst}, true
}

// AdminRule returns the rule that decides f's dir side in the admin tier —
// the first matching rule of the admin policies that select that side's
// pod, in evaluation order — or nil when no admin rule matches. It is the
// first step of Decide's trace for that side, without building the trace.
func (e *Engine) AdminRule(f Flow, dir policy.Direction) *policy.Rule {
	subject, peer := f.Dst, f.Src
	if dir == policy.Egress {
		subject, peer = f.Src, f.Dst
	}
	pod := subject.policyPod()
	if pod == nil {
		return nil
	}
	st := e.stage(tierOf(policy.TierAdmin), e.applicable(pod), pod, dir)
	m := matcher{e: e, dir: dir, subject: pod, peer: peer, ports: []l4.Port{f.Port}, dst: f.Dst}
	for _, p := range st.policies {
		for _, r := range p.rules[dir] {
			if m.rule(r, 1) != 0 {
				return r.Rule
			}
		}
	}
	return nil
}
