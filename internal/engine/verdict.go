package engine

import (
	"math/bits"
	"net/netip"
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
		Egress:  e.side(policy.Egress, f.Src, f.Dst, f),
		Ingress: e.side(policy.Ingress, f.Dst, f.Src, f),
	}
	v.Allowed = v.Egress.Allowed && v.Ingress.Allowed
	return v
}

// Allowed decides f like Decide, without building the trace: the matrix
// decides many flows and keeps only the bit.
func (e *Engine) Allowed(f Flow) bool {
	ports := [1]l4.Port{f.Port}
	return e.allowedPorts(f, ports[:]) == 1
}

// allowedPorts decides f on each of ports at once (f.Port aside): bit k of
// the result is ports[k], at most 64 of them. Peers are matched once for
// all the ports, and the ingress side is walked only for the ports egress
// allows, so a matrix over many ports costs little more than over one.
func (e *Engine) allowedPorts(f Flow, ports []l4.Port) uint64 {
	want := uint64(1)<<len(ports) - 1 // every bit when 64 ports: the shift makes 0
	if f.Src.policyPod() != nil && f.Src.Pod == f.Dst.Pod {
		return want // a pod can always reach itself
	}
	egress := e.walk(policy.Egress, f.Src, f.Dst, f.Dst, ports, want, nil)
	if egress == 0 {
		return 0
	}
	return e.walk(policy.Ingress, f.Dst, f.Src, f.Dst, ports, egress, nil)
}

// side is one side of f with its trace.
func (e *Engine) side(dir policy.Direction, subjectEP, peer Endpoint, f Flow) Side {
	ports := [1]l4.Port{f.Port}
	s := Side{Steps: []Step{}}
	s.Allowed = e.walk(dir, subjectEP, peer, f.Dst, ports[:], 1, &s) == 1
	return s
}

// walk is the tier walk, the one place that says how the tiers decide a
// side: for subject (the end whose policies apply) talking to peer, dst
// the flow's destination (named ports resolve against it), it walks the
// tiers (tiers.go) for the ports[k] whose bit k is in want, each port
// until a tier accepts or denies it, and returns those allowed. With s it
// records the trace there; a trace is of one port.
func (e *Engine) walk(dir policy.Direction, subjectEP, peer, dst Endpoint, ports []l4.Port, want uint64, s *Side) uint64 {
	subject := subjectEP.policyPod()
	note := ""
	switch {
	case subjectEP.Pod != nil && subject == nil:
		note = "host-network pods are not selected by policies"
	case subject == nil:
		what := "source"
		if dir == policy.Ingress {
			what = "destination"
		}
		note = what + " is not a pod: no " + dir.String() + " policy applies"
	case dir == policy.Ingress && peer.Node != nil && peer.Node.Name == subject.Node && subject.Node != "":
		// Kubelet probes and other node-local agents must reach their pods.
		note = "traffic from the pod's own node is always allowed"
	}
	if note != "" {
		if s != nil {
			s.Note = note
		}
		return want
	}
	m := matcher{e: e, dir: dir, subject: subject, peer: peer, ports: ports, dst: dst}
	var allowed uint64
	open, list := want, e.applicable(subject)
	for i := range tiers {
		st := e.stage(i, list, subject, dir)
		accepted, next := m.decide(&st, open, s)
		allowed |= accepted
		if open = next; open == 0 {
			return allowed
		}
	}
	if s != nil {
		s.Steps = append(s.Steps, Step{Tier: "Default", Action: ActionAllow, Note: "nothing denied it"})
	}
	return allowed | open
}

// matcher holds one side of one flow, over the ports being decided.
type matcher struct {
	e       *Engine
	dir     policy.Direction
	subject *state.Pod
	peer    Endpoint
	dst     Endpoint
	ports   []l4.Port
}

// ruleStep is the trace step of a deciding rule.
func ruleStep(tier policy.Tier, p *compiled, r compiledRule) Step {
	ref := p.Ref
	step := Step{Tier: tier.String(), Policy: &ref, Rule: r.Label(), Action: actionWord(p.Policy, r.Action)}
	switch {
	case r.FailClosed && p.Invalid:
		step.Note = "fail-closed: the policy is invalid (its errors say where); an invalid rule denies all traffic, an invalid Allow rule matches nothing"
	case r.FailClosed:
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

// rule returns the ports of cand (bits of m.ports) that r matches. For
// one port its ports are checked first, as before there were masks: that
// check is cheap and fails often. For many, the peers first: they are the
// same for every port, and when none matches no port is looked at.
func (m matcher) rule(r compiledRule, cand uint64) uint64 {
	if cand&(cand-1) == 0 { // one port
		if (!r.AllPorts && m.portsOf(r, cand) == 0) || !m.peers(r) {
			return 0
		}
		return cand
	}
	if !m.peers(r) {
		return 0
	}
	if r.AllPorts {
		return cand
	}
	return m.portsOf(r, cand)
}

// peers reports whether some peer of r matches.
func (m matcher) peers(r compiledRule) bool {
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

// portsOf returns the ports of cand that r's ports match.
func (m matcher) portsOf(r compiledRule, cand uint64) uint64 {
	var hit uint64
	for b := cand; b != 0; b &= b - 1 {
		k := bits.TrailingZeros64(b)
		if m.portMatches(r.Ports, m.ports[k]) {
			hit |= 1 << k
		}
	}
	return hit
}

func (m matcher) portMatches(ports []policy.PortMatch, port l4.Port) bool {
	for _, pm := range ports {
		if pm.Named == "" {
			if pm.Range.Contains(port) {
				return true
			}
			continue
		}
		// Named ports are resolved against the destination pod's own
		// container ports, per protocol.
		dst := m.dst.policyPod()
		if dst == nil || (pm.NamedProto != 0 && pm.NamedProto != port.Proto) {
			continue
		}
		if p, ok := dst.NamedPort(pm.Named, port.Proto); ok && p == port {
			return true
		}
	}
	return false
}

func (m matcher) peerMatches(p compiledPeer) bool {
	switch p.Kind {
	case policy.PeerPods:
		pod := m.peer.policyPod()
		if pod == nil || !m.e.podHas(pod, p.atom) {
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
