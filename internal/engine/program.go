package engine

import (
	"iter"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Program is one side (ingress or egress) of a pod's decision as ordered
// data rather than as a verdict: the stages of the tier walk (tiers.go),
// with every peer resolved to its members. The compiler turns it into
// kernel rules, so that the kernel decides exactly what Decide decides.
type Program struct {
	// Tiers are the tiers that have something to say, in the walk's order,
	// up to the one whose Rest is Deny: no later tier is reached. After
	// the last one the default allows.
	Tiers []TierProgram
}

// TierProgram is one tier of a Program.
type TierProgram struct {
	Tier policy.Tier
	// Rules in order: per connection the first that matches decides, by
	// its Outcome (a Pass is Next: the next tier decides). The rules of
	// the NetworkPolicy tier all allow, so their order does not matter.
	Rules []AppliedRule
	// Rest is what the tier does with what no rule matched: Next, or Deny
	// when the tier isolates the pod (NetworkPolicy, or in legacy mode the
	// namespace), and then IsolatedBy says who does.
	Rest       Outcome
	IsolatedBy []policy.Ref
}

// Empty reports whether no policy has anything to say: the default allows.
func (p Program) Empty() bool { return len(p.Tiers) == 0 }

// Rest is what the program does with what no rule decides: Deny, by the
// tier that isolates the pod, or Accept, the default.
func (p Program) Rest() (Outcome, []policy.Ref) {
	if n := len(p.Tiers); n > 0 && p.Tiers[n-1].Rest == Deny {
		return Deny, p.Tiers[n-1].IsolatedBy
	}
	return Accept, nil
}

// AppliedRule is a rule with its peers resolved for one subject pod.
type AppliedRule struct {
	Policy *policy.Policy
	Rule   *policy.Rule
	Peers  []PeerSet // nil with Rule.AllPeers
}

// Outcome is what the rule does to a connection it matches.
func (ar AppliedRule) Outcome() Outcome { return outcomeOf(ar.Rule.Action) }

// PeerSet is a peer as seen from one subject pod. Key names the selection
// (not its members): two peers with equal keys always have equal members,
// so the compiler can share one kernel set between them and update it
// element by element. Members are listed only when asked for: the compiler
// asks once per key, not once per subject pod and rule.
type PeerSet struct {
	Key     string
	Kind    policy.PeerKind
	Block   policy.IPBlock         // PeerIPBlock
	Domains []policy.DomainPattern // PeerDomains

	e       *Engine
	peer    compiledPeer
	subject *state.Pod
}

// For returns the peer as e decides it: e must be the engine the peer came
// from or one that Update made from it, and the peer must have come for a
// pod with the same ProgramKey in e (compile keeps tables across engines).
func (ps PeerSet) For(e *Engine) PeerSet {
	ps.e = e
	return ps
}

// ProgramKey identifies the policies that select a pod, as Program sees
// them: a pod has the same Program in e and in an engine that Update made
// from e while its key and the pod itself are the same. It is the identity
// of the pod's list of applicable policies, which Update carries over while
// they stay the same; a key holds its list alive, so keys of engines that
// share no Update lineage never collide.
type ProgramKey struct {
	lists podTiers
}

// ProgramKey returns pod's key.
func (e *Engine) ProgramKey(pod *state.Pod) ProgramKey {
	e.finish() // the lists that keys name
	return ProgramKey{e.applicable(pod)}
}

// Peer is the peer as its rule wrote it: its selectors, block or names.
func (ps PeerSet) Peer() policy.Peer { return ps.peer.Peer }

// Pods lists the members of a PeerPods peer: never host-network pods.
func (ps PeerSet) Pods() []*state.Pod { return slices.Collect(ps.All()) }

// All yields the members of a PeerPods peer, as Pods lists them, without
// making the list.
func (ps PeerSet) All() iter.Seq[*state.Pod] {
	return func(yield func(*state.Pod) bool) {
		if ps.Kind != policy.PeerPods {
			return
		}
		ns := ps.peer.Pods.Namespaces
		for _, id := range ps.e.members(ps.peer.atom) {
			pod := ps.e.c.Pods[id]
			if ns.Relative() && !ns.Matches(pod.Namespace.Name, pod.Namespace.Labels, ps.subject.Namespace.Name, ps.subject.Namespace.Labels) {
				continue
			}
			if !yield(pod) {
				return
			}
		}
	}
}

// Nodes lists the members of a PeerNodes peer.
func (ps PeerSet) Nodes() []*state.Node {
	if ps.Kind != policy.PeerNodes {
		return nil
	}
	var nodes []*state.Node
	for _, n := range ps.e.c.Nodes {
		if ps.peer.Nodes.Matches(n.Labels) {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// Program returns what decides dir-traffic of pod (a pod that policies can
// select: not host-network): the tiers as walk visits them.
func (e *Engine) Program(pod *state.Pod, dir policy.Direction) Program {
	var prog Program
	list := e.applicable(pod)
	for i := range tiers {
		tp := e.tierProgram(e.stage(i, list, pod, dir), pod)
		if len(tp.Rules) > 0 || tp.Rest != Next {
			prog.Tiers = append(prog.Tiers, tp)
		}
		if tp.Rest == Deny {
			break
		}
	}
	return prog
}

// tierProgram lays out one stage of the walk for subject.
func (e *Engine) tierProgram(st stage, subject *state.Pod) TierProgram {
	tp := TierProgram{Tier: st.tier, Rest: st.rest}
	for _, p := range st.policies {
		if !st.counts(p) {
			continue
		}
		for _, r := range p.rules[st.dir] {
			tp.Rules = append(tp.Rules, e.apply(p, r, subject))
		}
	}
	if st.rest == Deny {
		tp.IsolatedBy = st.isolatedBy(subject)
	}
	return tp
}

// NumTiers is the number of tiers the walk has (ProgramTier's i).
const NumTiers = numTiers

// TierKey names tier i of a pod's program in one direction without
// laying it out: pods with equal keys have equal TierPrograms there, but
// for peers whose namespaces are relative to the subject's (KEP-2091
// related, sameLabels, notSameLabels), which select per namespace. For a
// front end that reports many pods' programs and lays out each distinct
// tier once (exposure): a cluster of 100k pods has tens of thousands of
// programs but few distinct admin tiers.
type TierKey struct {
	list *tierList
	dir  policy.Direction
	rest Outcome
	// namespace isolates under Options.LegacyNamespaceIsolation, and
	// IsolatedBy then names it.
	namespace string
}

// Rest is what the tier does with what none of its rules decides: Deny
// ends the walk.
func (k TierKey) Rest() Outcome { return k.rest }

// ProgramTierKey returns the key of tier i of pod's dir-side program.
func (e *Engine) ProgramTierKey(pod *state.Pod, dir policy.Direction, i int) TierKey {
	e.finish() // the lists that keys name: a lazy engine makes new ones per call
	lists := e.applicable(pod)
	st := e.stage(i, lists, pod, dir)
	k := TierKey{list: lists[i], dir: dir, rest: st.rest}
	if st.all && st.rest == Deny && st.isolating {
		k.namespace = pod.Namespace.Name
	}
	return k
}

// ProgramTier returns tier i of pod's dir-side program, as Program lists
// it (where the tier has something to say and an earlier one did not
// end the walk).
func (e *Engine) ProgramTier(pod *state.Pod, dir policy.Direction, i int) TierProgram {
	return e.tierProgram(e.stage(i, e.applicable(pod), pod, dir), pod)
}

func (e *Engine) apply(p *compiled, r compiledRule, subject *state.Pod) AppliedRule {
	ar := AppliedRule{Policy: p.Policy, Rule: r.Rule}
	if r.AllPeers {
		return ar
	}
	for _, peer := range r.peers {
		ar.Peers = append(ar.Peers, e.resolve(peer, subject))
	}
	return ar
}

// resolve names a peer's selection as seen from subject.
func (e *Engine) resolve(p compiledPeer, subject *state.Pod) PeerSet {
	ps := PeerSet{Kind: p.Kind, e: e, peer: p, subject: subject}
	switch p.Kind {
	case policy.PeerPods:
		ps.Key = "pods " + namespaceKey(p.Pods.Namespaces, subject)
		if p.Pods.Pods.Text != "" {
			ps.Key += " " + p.Pods.Pods.Text
		}
	case policy.PeerIPBlock:
		ps.Key = "cidr " + p.Block.String()
		ps.Block = p.Block
	case policy.PeerNodes:
		ps.Key = "nodes " + p.Nodes.Text
	case policy.PeerDomains:
		ps.Key = "domains " + policy.JoinDomains(p.Domains, ",")
		ps.Domains = p.Domains
	}
	return ps
}

// namespaceKey names a namespace selection; relative ones are resolved
// against the subject, so that subjects of one namespace share the set.
func namespaceKey(ns policy.NamespaceSelector, subject *state.Pod) string {
	switch ns.Match {
	case policy.NamespaceLabels:
		if ns.Selector.Text == "" {
			return "ns(all)"
		}
		return "ns(" + ns.Selector.Text + ")"
	case policy.NamespaceName:
		return "ns=" + ns.Name
	case policy.NamespaceSelf:
		return "ns=" + subject.Namespace.Name
	case policy.NamespaceNotSelf:
		return "ns!=" + subject.Namespace.Name
	}
	var b strings.Builder
	if ns.Match == policy.NamespaceSameLabels {
		b.WriteString("ns-same(")
	} else {
		b.WriteString("ns-notsame(")
	}
	for i, k := range ns.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		v, ok := subject.Namespace.Labels[k]
		b.WriteString(k)
		if ok {
			b.WriteString("=" + v)
		} else {
			b.WriteString(" absent")
		}
	}
	return b.String() + ")"
}
