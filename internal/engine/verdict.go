package engine

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Endpoint is one end of a flow: a pod, a node, or an address outside the
// cluster. IP is always set.
type Endpoint struct {
	IP   netip.Addr
	Pod  *state.Pod  // nil unless the address is a pod's (host-network pods included)
	Node *state.Node // the node owning the address (host-network pods: their node)
	// ByAddress: the user named this end by its address, so a flow keeps
	// that address (and its family); an end named as a pod takes its
	// address of the other end's family (NewFlow).
	ByAddress bool
	// Names are the DNS names the address was resolved as (canonical:
	// policy.CanonicalDomain), which domainNames peers match (NameEndpoint,
	// explain --resolved-as).
	Names []string
}

func (ep Endpoint) String() string {
	switch {
	case ep.Pod != nil:
		return ep.Pod.Key()
	case ep.Node != nil:
		return "node/" + ep.Node.Name
	case len(ep.Names) > 0:
		return strings.Join(ep.Names, ",")
	}
	return ep.IP.String()
}

// policyPod is the pod policies can select at this endpoint: host-network
// pods are never selected, as subjects or as pod peers.
func (ep Endpoint) policyPod() *state.Pod {
	if ep.Pod == nil || ep.Pod.HostNetwork {
		return nil
	}
	return ep.Pod
}

// Flow is a connection attempt.
type Flow struct {
	Src, Dst Endpoint
	Port     l4.Port
}

// Step is one tier's part in a side's decision.
type Step struct {
	Tier       string       `json:"tier"`
	Policy     *policy.Ref  `json:"policy,omitempty"`
	Rule       string       `json:"rule,omitempty"`
	Action     string       `json:"action"`
	IsolatedBy []policy.Ref `json:"isolatedBy,omitempty"`
	Note       string       `json:"note,omitempty"`
}

// Action words of steps that are not a rule's own action.
const (
	ActionNoMatch = "NoMatch" // the tier had nothing to say
	ActionAllow   = "Allow"
	ActionDeny    = "Deny"
)

// Side is the decision of one end: the source's egress or the destination's
// ingress.
type Side struct {
	Allowed bool   `json:"allowed"`
	Note    string `json:"note,omitempty"` // why no policy could apply, when none could
	Steps   []Step `json:"steps"`
}

// Verdict is the decision on a flow with its full trace.
type Verdict struct {
	Allowed bool   `json:"allowed"`
	Note    string `json:"note,omitempty"`
	Egress  Side   `json:"egress"`
	Ingress Side   `json:"ingress"`
}

// Decide returns the verdict on f: allowed only when the source's egress and
// the destination's ingress both allow it.
func (e *Engine) Decide(f Flow) Verdict {
	if f.Src.policyPod() != nil && f.Src.Pod == f.Dst.Pod {
		note := "a pod can always reach itself"
		return Verdict{Allowed: true, Note: note, Egress: Side{Allowed: true, Note: note, Steps: []Step{}}, Ingress: Side{Allowed: true, Note: note, Steps: []Step{}}}
	}
	v := Verdict{
		Egress:  e.side(policy.Egress, f.Src, f.Dst, f, true),
		Ingress: e.side(policy.Ingress, f.Dst, f.Src, f, true),
	}
	v.Allowed = v.Egress.Allowed && v.Ingress.Allowed
	return v
}

// Allowed decides f like Decide, without building the trace: the matrix
// decides many flows and keeps only the bit.
func (e *Engine) Allowed(f Flow) bool {
	if f.Src.policyPod() != nil && f.Src.Pod == f.Dst.Pod {
		return true
	}
	return e.side(policy.Egress, f.Src, f.Dst, f, false).Allowed && e.side(policy.Ingress, f.Dst, f.Src, f, false).Allowed
}

// side walks the tiers for subject (the end whose policies apply) talking to
// peer. Without trace it returns only Allowed.
func (e *Engine) side(dir policy.Direction, subjectEP, peer Endpoint, f Flow, trace bool) Side {
	subject := subjectEP.policyPod()
	switch {
	case subjectEP.Pod != nil && subject == nil:
		return Side{Allowed: true, Note: "host-network pods are not selected by policies", Steps: []Step{}}
	case subject == nil:
		what := "source"
		if dir == policy.Ingress {
			what = "destination"
		}
		return Side{Allowed: true, Note: what + " is not a pod: no " + dir.String() + " policy applies", Steps: []Step{}}
	case dir == policy.Ingress && peer.Node != nil && peer.Node.Name == subject.Node && subject.Node != "":
		// Kubelet probes and other node-local agents must reach their pods.
		return Side{Allowed: true, Note: "traffic from the pod's own node is always allowed", Steps: []Step{}}
	}
	m := matcher{e: e, dir: dir, subject: subject, peer: peer, port: f.Port, dst: f.Dst}
	applicable := e.applicable(subject)
	var s Side

	// Admin tier: the first matching rule decides; Pass skips to NetworkPolicy.
	tier := 0
	for tier < len(applicable) && applicable[tier].Tier == policy.TierAdmin {
		tier++
	}
	admin, rest := applicable[:tier], applicable[tier:]
	if p, r, ok := m.firstMatch(admin); ok {
		if trace {
			s.Steps = append(s.Steps, ruleStep(policy.TierAdmin, p, r))
		}
		if r.Action != policy.Pass {
			s.Allowed = r.Action == policy.Allow
			return s
		}
	} else if len(admin) > 0 && trace {
		s.Steps = append(s.Steps, Step{Tier: policy.TierAdmin.String(), Action: ActionNoMatch, Note: countNote(len(admin), "admin policy selects", "admin policies select") + " the pod; no rule matched"})
	}

	// NetworkPolicy tier: isolation is per direction; the allow rules of all
	// isolating policies are a union; isolated and unmatched is final.
	tier = 0
	for tier < len(rest) && rest[tier].Tier == policy.TierNetworkPolicy {
		tier++
	}
	nps, baseline := rest[:tier], rest[tier:]
	var isolating []policy.Ref
	legacy := e.opts.LegacyNamespaceIsolation && dir == policy.Ingress
	isolated := legacy && subject.Namespace.LegacyIngressIsolation
	if isolated && trace {
		isolating = append(isolating, policy.Ref{Kind: policy.KindLegacyNamespaceIsolation, Name: subject.Namespace.Name})
	}
	for _, np := range nps {
		if np.Isolates[dir] && !legacy {
			isolated = true
			if trace {
				isolating = append(isolating, np.Ref)
			}
		}
	}
	if isolated {
		for _, np := range nps {
			if !np.Isolates[dir] && !legacy {
				continue
			}
			for _, r := range np.rules[dir] {
				if m.rule(r) {
					if trace {
						s.Steps = append(s.Steps, ruleStep(policy.TierNetworkPolicy, np, r))
					}
					s.Allowed = true
					return s
				}
			}
		}
		if trace {
			s.Steps = append(s.Steps, Step{Tier: policy.TierNetworkPolicy.String(), Action: ActionDeny, IsolatedBy: isolating,
				Note: "the pod is isolated for " + dir.String() + " and no rule of the isolating policies allows this"})
		}
		return s
	}
	if trace {
		s.Steps = append(s.Steps, Step{Tier: policy.TierNetworkPolicy.String(), Action: ActionNoMatch, Note: "no NetworkPolicy isolates the pod for " + dir.String()})
	}

	// Baseline tier: the first matching rule decides; Pass ends the tier.
	if p, r, ok := m.firstMatch(baseline); ok {
		if trace {
			s.Steps = append(s.Steps, ruleStep(policy.TierBaseline, p, r))
		}
		if r.Action != policy.Pass {
			s.Allowed = r.Action == policy.Allow
			return s
		}
	} else if len(baseline) > 0 && trace {
		s.Steps = append(s.Steps, Step{Tier: policy.TierBaseline.String(), Action: ActionNoMatch, Note: countNote(len(baseline), "baseline policy selects", "baseline policies select") + " the pod; no rule matched"})
	}
	if trace {
		s.Steps = append(s.Steps, Step{Tier: "Default", Action: ActionAllow, Note: "nothing denied it"})
	}
	s.Allowed = true
	return s
}

func countNote(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// matcher holds one side of one flow.
type matcher struct {
	e       *Engine
	dir     policy.Direction
	subject *state.Pod
	peer    Endpoint
	dst     Endpoint
	port    l4.Port
}

// firstMatch finds the first rule of ps (in order) that matches.
func (m matcher) firstMatch(ps []*compiled) (*compiled, compiledRule, bool) {
	for _, p := range ps {
		for _, r := range p.rules[m.dir] {
			if m.rule(r) {
				return p, r, true
			}
		}
	}
	return nil, compiledRule{}, false
}

// ruleStep is the trace step of a deciding rule.
func ruleStep(tier policy.Tier, p *compiled, r compiledRule) Step {
	ref := p.Ref
	step := Step{Tier: tier.String(), Policy: &ref, Rule: r.Label(), Action: actionWord(p.Policy, r.Action)}
	if r.FailClosed {
		step.Note = "fail-closed: a peer of this rule has a field netpol does not know"
	}
	return step
}

// actionWord is the action as the policy's own API spells it.
func actionWord(p *policy.Policy, a policy.Action) string {
	if a == policy.Allow && p.Kind == policy.KindClusterNetworkPolicy {
		return "Accept"
	}
	return a.String()
}

// rule reports whether r matches the flow.
func (m matcher) rule(r compiledRule) bool {
	if !r.AllPorts && !m.ports(r.Ports) {
		return false
	}
	if r.AllPeers {
		return true
	}
	for _, p := range r.peers {
		if m.peerMatches(p) {
			return true
		}
	}
	return false
}

func (m matcher) ports(ports []policy.PortMatch) bool {
	for _, pm := range ports {
		if pm.Named == "" {
			if pm.Range.Contains(m.port) {
				return true
			}
			continue
		}
		// Named ports are resolved against the destination pod's own
		// container ports, per protocol.
		dst := m.dst.policyPod()
		if dst == nil || (pm.NamedProto != 0 && pm.NamedProto != m.port.Proto) {
			continue
		}
		if p, ok := dst.NamedPort(pm.Named, m.port.Proto); ok && p == m.port {
			return true
		}
	}
	return false
}

func (m matcher) peerMatches(p compiledPeer) bool {
	switch p.Kind {
	case policy.PeerPods:
		pod := m.peer.policyPod()
		if pod == nil || !m.e.ix.podHas(pod.ID, p.atom) {
			return false
		}
		if ns := p.Pods.Namespaces; ns.Relative() {
			return ns.Matches(pod.Namespace.Name, pod.Namespace.Labels, m.subject.Namespace.Name, m.subject.Namespace.Labels)
		}
		return true
	case policy.PeerIPBlock:
		return p.Block.Contains(m.peer.IP)
	case policy.PeerNodes:
		return m.peer.Node != nil && p.Nodes.Matches(m.peer.Node.Labels)
	case policy.PeerDomains:
		return domainsMatch(p.Domains, m.peer.Names)
	}
	return false
}

// domainsMatch reports whether one of names is one that patterns name.
func domainsMatch(patterns []policy.DomainPattern, names []string) bool {
	for _, n := range names {
		for _, p := range patterns {
			if p.Matches(n) {
				return true
			}
		}
	}
	return false
}
