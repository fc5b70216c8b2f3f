package engine

import (
	"iter"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Program is one side (ingress or egress) of a pod's decision as ordered
// data rather than as a verdict: the same tier walk as Decide, with every
// peer resolved to its members. The compiler turns it into kernel rules, so
// that the kernel decides exactly what Decide decides.
type Program struct {
	// Admin rules in evaluation order; the first match decides, Pass jumps
	// to the NetworkPolicy tier.
	Admin []AppliedRule
	// Isolated: some NetworkPolicy (or, in legacy mode, the namespace)
	// isolates the pod in this direction. Then Allow (a union) decides and
	// everything else is denied; Baseline is never reached.
	Isolated   bool
	IsolatedBy []policy.Ref
	Allow      []AppliedRule
	// Baseline rules in order, reached only when not isolated; Pass ends
	// the tier (default allow).
	Baseline []AppliedRule
}

// Empty reports whether no policy has anything to say: the default allows.
func (p Program) Empty() bool {
	return len(p.Admin) == 0 && !p.Isolated && len(p.Baseline) == 0
}

// AppliedRule is a rule with its peers resolved for one subject pod.
type AppliedRule struct {
	Policy *policy.Policy
	Rule   *policy.Rule
	Peers  []PeerSet // nil with Rule.AllPeers
}

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
	lists [numTiers]listKey // of the lists of the pod's applicable policies, per tier
}

// listKey is the identity of a list of policies.
type listKey struct {
	first **compiled // where the list starts
	n     int
}

// ProgramKey returns pod's key.
func (e *Engine) ProgramKey(pod *state.Pod) ProgramKey {
	e.finish() // the lists that keys name
	var key ProgramKey
	for t, list := range e.applicable(pod) {
		if len(list) > 0 {
			key.lists[t] = listKey{&list[0], len(list)}
		}
	}
	return key
}

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
// select: not host-network).
func (e *Engine) Program(pod *state.Pod, dir policy.Direction) Program {
	var prog Program
	applicable := e.applicable(pod)
	legacy := e.opts.LegacyNamespaceIsolation && dir == policy.Ingress
	if legacy && pod.Namespace.LegacyIngressIsolation {
		prog.Isolated = true
		prog.IsolatedBy = append(prog.IsolatedBy, policy.Ref{Kind: policy.KindLegacyNamespaceIsolation, Name: pod.Namespace.Name})
	}
	for _, p := range applicable[tierOf(policy.TierNetworkPolicy)] {
		if p.Isolates[dir] && !legacy {
			prog.Isolated = true
			prog.IsolatedBy = append(prog.IsolatedBy, p.Ref)
		}
	}
	for _, list := range applicable {
		for _, p := range list {
			for _, r := range p.rules[dir] {
				switch {
				case p.Tier == policy.TierAdmin:
					prog.Admin = append(prog.Admin, e.apply(p, r, pod))
				case p.Tier == policy.TierNetworkPolicy && prog.Isolated && (p.Isolates[dir] || legacy):
					prog.Allow = append(prog.Allow, e.apply(p, r, pod))
				case p.Tier == policy.TierBaseline && !prog.Isolated:
					prog.Baseline = append(prog.Baseline, e.apply(p, r, pod))
				}
			}
		}
	}
	return prog
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
