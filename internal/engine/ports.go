package engine

import (
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
)

// AllowedPorts decides the flow f on each port of ports, as Allowed does
// with f.Port set to it, into allowed (len(ports) long). A front end that
// decides a pair of pods on every range of ports (diff) asks once: which
// peers a rule matches does not depend on the port, so each side walks its
// policies once, with the set of ports still undecided, instead of once
// per port.
func (e *Engine) AllowedPorts(f Flow, ports []l4.Port, allowed []bool) {
	if f.Src.policyPod() != nil && f.Src.Pod == f.Dst.Pod {
		for i := range ports {
			allowed[i] = true
		}
		return
	}
	egress := make([]bool, len(ports))
	e.sidePorts(policy.Egress, f.Src, f.Dst, f, ports, egress)
	e.sidePorts(policy.Ingress, f.Dst, f.Src, f, ports, allowed)
	for i := range allowed {
		allowed[i] = allowed[i] && egress[i]
	}
}

// SidePorts decides one side of f (dir egress: the source's, ingress: the
// destination's) on each port of ports, into allowed. A flow is allowed
// where both sides allow it (but for a pod talking to itself): a front end
// that knows one side cannot have changed decides the other alone.
func (e *Engine) SidePorts(dir policy.Direction, f Flow, ports []l4.Port, allowed []bool) {
	if dir == policy.Egress {
		e.sidePorts(policy.Egress, f.Src, f.Dst, f, ports, allowed)
	} else {
		e.sidePorts(policy.Ingress, f.Dst, f.Src, f, ports, allowed)
	}
}

// sidePorts is side without the trace, for every port of ports at once:
// the same tiers in the same order, each deciding the ports that reach it.
func (e *Engine) sidePorts(dir policy.Direction, subjectEP, peer Endpoint, f Flow, ports []l4.Port, allowed []bool) {
	subject := subjectEP.policyPod()
	if subject == nil || dir == policy.Ingress && peer.Node != nil && peer.Node.Name == subject.Node && subject.Node != "" {
		// Host-network pods and ends that are not pods are not selected;
		// a pod's own node may always reach it.
		for i := range allowed {
			allowed[i] = true
		}
		return
	}
	m := matcher{e: e, dir: dir, subject: subject, peer: peer, dst: f.Dst}
	applicable := e.applicable(subject)
	// open lists the ports no tier has decided yet.
	open := make([]int, len(ports))
	for i := range open {
		open[i] = i
	}
	// firstMatch lets the first matching rule of ps decide each open port
	// (the first matching rule for each port, as matcher.firstMatch does);
	// ports decided by Pass come back, for the next tier.
	firstMatch := func(ps []*compiled) []int {
		var passed []int
		for _, p := range ps {
			for _, r := range p.rules[dir] {
				if len(open) == 0 {
					return passed
				}
				if !r.AllPeers && !m.anyPeer(r) {
					continue
				}
				rest := open[:0]
				for _, i := range open {
					m.port = ports[i]
					switch {
					case !r.AllPorts && !m.ports(r.Ports):
						rest = append(rest, i)
					case r.Action == policy.Pass:
						passed = append(passed, i)
					default:
						allowed[i] = r.Action == policy.Allow
					}
				}
				open = rest
			}
		}
		return passed
	}

	tier := 0
	for tier < len(applicable) && applicable[tier].Tier == policy.TierAdmin {
		tier++
	}
	admin, rest := applicable[:tier], applicable[tier:]
	passed := firstMatch(admin)
	// Passed ports and unmatched ones go on to the NetworkPolicy tier.
	open = append(open, passed...)

	tier = 0
	for tier < len(rest) && rest[tier].Tier == policy.TierNetworkPolicy {
		tier++
	}
	nps, baseline := rest[:tier], rest[tier:]
	legacy := e.opts.LegacyNamespaceIsolation && dir == policy.Ingress
	isolated := legacy && subject.Namespace.LegacyIngressIsolation
	for _, np := range nps {
		isolated = isolated || np.Isolates[dir] && !legacy
	}
	if isolated {
		for _, i := range open {
			allowed[i] = false
		}
		for _, np := range nps {
			if !np.Isolates[dir] && !legacy {
				continue
			}
			for _, r := range np.rules[dir] {
				if !r.AllPeers && !m.anyPeer(r) {
					continue
				}
				for _, i := range open {
					m.port = ports[i]
					if r.AllPorts || m.ports(r.Ports) {
						allowed[i] = true
					}
				}
			}
		}
		return
	}
	// Baseline: the first matching rule decides; Pass ends the tier, and
	// what no tier decided is allowed.
	for _, i := range firstMatch(baseline) {
		allowed[i] = true
	}
	for _, i := range open {
		allowed[i] = true
	}
}

// anyPeer reports whether some peer of r matches (r.AllPeers aside).
func (m matcher) anyPeer(r compiledRule) bool {
	for _, p := range r.peers {
		if m.peerMatches(p) {
			return true
		}
	}
	return false
}
