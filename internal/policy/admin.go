package policy

import (
	"fmt"
	"github.com/netpol/netpol/internal/escape"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha2"

	"github.com/netpol/netpol/internal/apis/kep"
	"github.com/netpol/netpol/internal/l4"
)

// The admin APIs (AdminNetworkPolicy, BaselineAdminNetworkPolicy in two
// shapes, ClusterNetworkPolicy) share one structure: a subject, and ordered
// rules with an action, peers and ports. Each is first copied into the plain
// adminSpec below, so that validation and normalisation are written once.

type adminSpec struct {
	kind     string
	tier     Tier
	priority int32
	subject  adminSubject
	rules    [2][]adminRule
	limits   adminLimits
}

type adminLimits struct {
	rules, peers, ports int      // MaxItems
	actions             []string // accepted spellings, in the API's words
}

type adminSubject struct {
	namespaces *metav1.LabelSelector
	pods       *v1alpha1.NamespacedPod
}

type adminRule struct {
	name      string
	action    string
	peers     []adminPeer
	peersSet  bool                               // from/to present
	ports     *[]v1alpha1.AdminNetworkPolicyPort // v1alpha1
	protocols []v1alpha2.ClusterNetworkPolicyProtocol
	// wrongDirection names a peer list set on the wrong kind of rule (the
	// KEP shape has one rule type for both directions).
	wrongDirection string
}

type adminPeer struct {
	namespaces    *metav1.LabelSelector
	pods          *v1alpha1.NamespacedPod
	kepNamespaces *kep.NamespacedPeer
	kepPods       *kep.NamespacedPod
	nodes         *metav1.LabelSelector
	networks      []string
	domainNames   []string
}

// The released actions map onto the model's three.
var actionOf = map[string]Action{"Allow": Allow, "Accept": Allow, "Deny": Deny, "Pass": Pass}

// domainNameRE is the pattern of the CRDs' DomainName type.
var domainNameRE = regexp.MustCompile(`^(\*\.)?([a-zA-z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.)+[a-zA-z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.?$`)

// admin normalises an admin policy. A policy with errors is not left
// out, which would lift its denies: it is enforced in its fail-closed form
// (Policy.Invalid), each invalid part read as the reading that denies
// most, so that no flow is allowed that some reading of the policy as
// written would deny:
//
//   - a rule with an error fails closed (Rule.FailClosed): an Allow rule
//     matches nothing, a Deny or Pass rule (or one whose action netpol
//     does not know) denies every peer on every port;
//   - an error outside the rules (subject, priority, name, tier, number of
//     rules) leaves which pods the policy holds, or where it stands among
//     the others, unknown: the subject selects every pod when it is the
//     subject that is invalid, the priority is 0 when it is the priority,
//     and the policy can then only deny: its Allow rules match nothing and
//     its Pass rules deny what they match (a Pass would let pods the policy
//     was never meant for skip the admin policies after it).
//
// Valid rules stay as written. Allow is the most a rule can give and Deny
// the least, so each flow's verdict is at most what the policy as written
// would give it, whatever the invalid parts meant.
func (n *normalizer) admin(spec adminSpec) *Policy {
	p := &Policy{Ref: n.ref(spec.kind), Origin: n.obj.Origin, Tier: spec.tier, Priority: spec.priority}
	if spec.tier == 0 { // a tier netpol does not know: the first tier denies first
		p.Tier = TierAdmin
	}
	whole := n.errors() > 0 // priority, name or tier, reported by the caller
	before := n.errors()
	p.Subject = n.adminSubject(spec.subject)
	if n.errors() > before {
		whole = true
		p.Subject = everyPod
	}
	for _, d := range []Direction{Ingress, Egress} {
		field := "spec." + d.String()
		before := n.errors()
		n.maxItems(field, len(spec.rules[d]), spec.limits.rules)
		whole = whole || n.errors() > before
		for i, raw := range spec.rules[d] {
			before := n.errors()
			r := n.adminRule(p, d, i, idx(field, i), raw, spec.limits)
			if n.errors() > before {
				failClosed(r)
			}
			p.Rules[d] = append(p.Rules[d], r)
		}
	}
	if whole || n.errors() > 0 {
		p.Invalid = true
	}
	if whole {
		for _, rules := range p.Rules {
			for _, r := range rules {
				switch r.Action {
				case Allow:
					failClosed(r)
				case Pass:
					r.Action, r.FailClosed = Deny, true
				}
			}
		}
	}
	return p
}

// everyPod is the subject of an admin policy whose subject is invalid.
var everyPod = PodSelector{Namespaces: NamespaceSelector{Match: NamespaceLabels, Selector: Everything}, Pods: Everything}

// errors counts the errors reported so far about the object.
func (n *normalizer) errors() int { return len(n.r.List.Errors()) }

func (n *normalizer) adminSubject(s adminSubject) PodSelector {
	switch {
	case s.namespaces != nil && s.pods != nil:
		n.r.Errorf("spec.subject", "exactly one of namespaces or pods must be set")
	case s.namespaces != nil:
		return PodSelector{
			Namespaces: NamespaceSelector{Match: NamespaceLabels, Selector: n.selector("spec.subject.namespaces", s.namespaces)},
			Pods:       Everything,
		}
	case s.pods != nil:
		return PodSelector{
			Namespaces: NamespaceSelector{Match: NamespaceLabels, Selector: n.selector("spec.subject.pods.namespaceSelector", &s.pods.NamespaceSelector)},
			Pods:       n.selector("spec.subject.pods.podSelector", &s.pods.PodSelector),
		}
	case n.hasUnknown("spec.subject"):
		n.r.Errorf("spec.subject", "has no field netpol knows (namespaces or pods); refusing to guess which pods it selects")
	default:
		n.r.Errorf("spec.subject", "exactly one of namespaces or pods must be set")
	}
	return everyPod
}

// adminRule converts one rule. An error in it is reported, and the caller
// makes the rule fail closed; the rule is returned all the same.
func (n *normalizer) adminRule(p *Policy, d Direction, i int, field string, raw adminRule, lim adminLimits) *Rule {
	// The name is free text that the API server stores as written; every
	// output shows it, so it enters the model with its control characters
	// escaped (one place for terminals, logs and traces alike).
	r := &Rule{Policy: p, Dir: d, Index: i, Name: escape.Controls(raw.name)}
	n.ruleName(field+".name", raw.name)
	action, ok := actionOf[raw.action]
	if ok {
		ok = false
		for _, a := range lim.actions {
			ok = ok || a == raw.action
		}
	}
	if !ok {
		n.r.Errorf(field+".action", "unsupported value %q: supported values: %s", raw.action, quoteList(lim.actions))
		r.Action = Deny // an action netpol does not know denies
		return r
	}
	r.Action = action
	if raw.wrongDirection != "" {
		n.r.Errorf(field+"."+raw.wrongDirection, "not allowed in an %s rule", d)
	}
	peersField := field + ".from"
	if d == Egress {
		peersField = field + ".to"
	}
	if !raw.peersSet || len(raw.peers) == 0 {
		n.r.Errorf(peersField, "Required value: at least one peer")
		return r
	}
	n.maxItems(peersField, len(raw.peers), lim.peers)
	named := n.adminPorts(r, field, raw, lim)
	for j, peer := range raw.peers {
		pf := idx(peersField, j)
		peers, known := n.adminPeer(pf, peer)
		if !known {
			if n.hasUnknown(pf) {
				n.r.Warnf(pf, "peer has no field netpol knows; failing closed: %s", failClosedMeans(r.Action))
				failClosed(r)
				return r
			}
			n.r.Errorf(pf, "exactly one peer field must be set")
			continue
		}
		if named != "" {
			for _, pe := range peers {
				if pe.Kind != PeerPods {
					n.r.Errorf(pf, "networks/nodes/domainNames peer cannot be set with named ports (%s): only pods have named ports", named)
					break
				}
			}
		}
		for k := range peers {
			peers[k].Index = j
		}
		r.Peers = append(r.Peers, peers...)
	}
	return r
}

// adminPeer converts one peer; known is false when no field is set.
func (n *normalizer) adminPeer(field string, pe adminPeer) (peers []Peer, known bool) {
	set := count(pe.namespaces != nil, pe.pods != nil, pe.kepNamespaces != nil, pe.kepPods != nil, pe.nodes != nil, pe.networks != nil, pe.domainNames != nil)
	if set == 0 {
		return nil, false
	}
	if set > 1 {
		n.r.Errorf(field, "exactly one peer field must be set, got %d", set)
		return nil, true
	}
	switch {
	case pe.namespaces != nil:
		ns := NamespaceSelector{Match: NamespaceLabels, Selector: n.selector(field+".namespaces", pe.namespaces)}
		peers = append(peers, Peer{Kind: PeerPods, Pods: PodSelector{Namespaces: ns, Pods: Everything}})
	case pe.pods != nil:
		peers = append(peers, Peer{Kind: PeerPods, Pods: PodSelector{
			Namespaces: NamespaceSelector{Match: NamespaceLabels, Selector: n.selector(field+".pods.namespaceSelector", &pe.pods.NamespaceSelector)},
			Pods:       n.selector(field+".pods.podSelector", &pe.pods.PodSelector),
		}})
	case pe.kepNamespaces != nil:
		ns, ok := n.kepNamespaces(field+".namespaces", pe.kepNamespaces)
		if !ok {
			return nil, !n.hasUnknown(field)
		}
		peers = append(peers, Peer{Kind: PeerPods, Pods: PodSelector{Namespaces: ns, Pods: Everything}})
	case pe.kepPods != nil:
		ns, ok := n.kepNamespaces(field+".pods.namespaces", &pe.kepPods.Namespaces)
		if !ok {
			return nil, !n.hasUnknown(field)
		}
		peers = append(peers, Peer{Kind: PeerPods, Pods: PodSelector{Namespaces: ns, Pods: n.selector(field+".pods.podSelector", &pe.kepPods.PodSelector)}})
	case pe.nodes != nil:
		peers = append(peers, Peer{Kind: PeerNodes, Nodes: n.selector(field+".nodes", pe.nodes)})
	case pe.networks != nil:
		if len(pe.networks) == 0 {
			n.r.Errorf(field+".networks", "must have at least 1 item")
		}
		n.maxItems(field+".networks", len(pe.networks), 25)
		for k, c := range pe.networks {
			if len(c) > 43 {
				n.r.Errorf(idx(field+".networks", k), "may not be longer than 43 characters")
				continue
			}
			if prefix, ok := n.cidr(idx(field+".networks", k), c); ok {
				peers = append(peers, Peer{Kind: PeerIPBlock, Block: IPBlock{CIDR: prefix}})
			}
		}
	case pe.domainNames != nil:
		if len(pe.domainNames) == 0 {
			n.r.Errorf(field+".domainNames", "must have at least 1 item")
		}
		n.maxItems(field+".domainNames", len(pe.domainNames), 25)
		var patterns []DomainPattern
		for k, d := range pe.domainNames {
			if !domainNameRE.MatchString(d) {
				n.r.Errorf(idx(field+".domainNames", k), "invalid domain name %q", d)
				continue
			}
			patterns = append(patterns, ParseDomainPattern(d))
		}
		peers = append(peers, Peer{Kind: PeerDomains, Domains: patterns})
	}
	return peers, true
}

// kepNamespaces converts the KEP-2091 namespaces peer; ok is false when no
// field is set (the caller decides between fail-closed and an error).
func (n *normalizer) kepNamespaces(field string, k *kep.NamespacedPeer) (NamespaceSelector, bool) {
	set := count(k.Related != nil, k.NamespaceSelector != nil, k.SameLabels != nil, k.NotSameLabels != nil)
	if set == 0 {
		if !n.hasUnknown(field) {
			n.r.Errorf(field, "exactly one of namespaceSelector, sameLabels, notSameLabels or related must be set")
		}
		return NamespaceSelector{}, false
	}
	if set > 1 {
		n.r.Errorf(field, "exactly one of namespaceSelector, sameLabels, notSameLabels or related must be set, got %d", set)
		return NamespaceSelector{}, true
	}
	switch {
	case k.Related != nil:
		switch *k.Related {
		case kep.Self:
			return NamespaceSelector{Match: NamespaceSelf}, true
		case kep.NotSelf:
			return NamespaceSelector{Match: NamespaceNotSelf}, true
		}
		n.r.Errorf(field+".related", "unsupported value %q: supported values: \"Self\", \"NotSelf\"", *k.Related)
	case k.NamespaceSelector != nil:
		return NamespaceSelector{Match: NamespaceLabels, Selector: n.selector(field+".namespaceSelector", k.NamespaceSelector)}, true
	case k.SameLabels != nil:
		if len(k.SameLabels) == 0 {
			n.r.Errorf(field+".sameLabels", "must have at least 1 item")
		}
		return NamespaceSelector{Match: NamespaceSameLabels, Keys: k.SameLabels}, true
	default:
		if len(k.NotSameLabels) == 0 {
			n.r.Errorf(field+".notSameLabels", "must have at least 1 item")
		}
		return NamespaceSelector{Match: NamespaceNotSameLabels, Keys: k.NotSameLabels}, true
	}
	return NamespaceSelector{}, true
}

// adminPorts fills r's ports from either API's port list; it returns the
// first named port, which constrains the peers.
func (n *normalizer) adminPorts(r *Rule, field string, raw adminRule, lim adminLimits) (named string) {
	switch {
	case raw.ports != nil:
		ports := *raw.ports
		if len(ports) == 0 {
			n.r.Errorf(field+".ports", "must have at least 1 item")
		}
		n.maxItems(field+".ports", len(ports), lim.ports)
		for j, port := range ports {
			pf := idx(field+".ports", j)
			switch {
			case count(port.PortNumber != nil, port.NamedPort != nil, port.PortRange != nil) != 1:
				n.r.Errorf(pf, "exactly one of portNumber, namedPort or portRange must be set")
			case port.PortNumber != nil:
				proto, ok1 := n.protocol(pf+".portNumber.protocol", string(port.PortNumber.Protocol))
				num, ok2 := n.portNumber(pf+".portNumber.port", port.PortNumber.Port)
				if ok1 && ok2 {
					r.Ports = append(r.Ports, PortMatch{Range: l4.Range{Proto: proto, First: num, Last: num}})
				}
			case port.NamedPort != nil:
				if n.portName(pf+".namedPort", *port.NamedPort) {
					r.Ports = append(r.Ports, PortMatch{Named: *port.NamedPort})
					if named == "" {
						named = *port.NamedPort
					}
				}
			default:
				proto, ok := n.protocol(pf+".portRange.protocol", string(port.PortRange.Protocol))
				if pr, ok2 := n.portRange(pf+".portRange", port.PortRange.Start, port.PortRange.End); ok && ok2 {
					pr.Proto = proto
					r.Ports = append(r.Ports, PortMatch{Range: pr})
				}
			}
		}
	case raw.protocols != nil:
		if len(raw.protocols) == 0 {
			n.r.Errorf(field+".protocols", "must have at least 1 item")
		}
		n.maxItems(field+".protocols", len(raw.protocols), lim.ports)
		for j, pr := range raw.protocols {
			pf := idx(field+".protocols", j)
			if count(pr.TCP != nil, pr.UDP != nil, pr.SCTP != nil, pr.DestinationNamedPort != "") != 1 {
				n.r.Errorf(pf, "exactly one of tcp, udp, sctp or destinationNamedPort must be set")
				continue
			}
			var proto l4.Protocol
			var dp *v1alpha2.Port
			var protoField string
			switch {
			case pr.TCP != nil:
				proto, dp, protoField = l4.TCP, pr.TCP.DestinationPort, pf+".tcp"
			case pr.UDP != nil:
				proto, dp, protoField = l4.UDP, pr.UDP.DestinationPort, pf+".udp"
			case pr.SCTP != nil:
				proto, dp, protoField = l4.SCTP, pr.SCTP.DestinationPort, pf+".sctp"
			default:
				if n.portName(pf+".destinationNamedPort", pr.DestinationNamedPort) {
					r.Ports = append(r.Ports, PortMatch{Named: pr.DestinationNamedPort})
					if named == "" {
						named = pr.DestinationNamedPort
					}
				}
				continue
			}
			if dp == nil {
				n.r.Errorf(protoField, "must have at least 1 field (destinationPort)")
				continue
			}
			if pm, ok := n.cnpPort(protoField+".destinationPort", proto, dp); ok {
				r.Ports = append(r.Ports, pm)
			}
		}
	default:
		r.AllPorts = true
	}
	return named
}

func (n *normalizer) cnpPort(field string, proto l4.Protocol, dp *v1alpha2.Port) (PortMatch, bool) {
	switch {
	case (dp.Number != 0) == (dp.Range != nil):
		n.r.Errorf(field, "exactly one of number or range must be set")
	case dp.Range != nil:
		pr, ok := n.portRange(field+".range", dp.Range.Start, dp.Range.End)
		pr.Proto = proto
		return PortMatch{Range: pr}, ok
	default:
		num, ok := n.portNumber(field+".number", dp.Number)
		return PortMatch{Range: l4.Range{Proto: proto, First: num, Last: num}}, ok
	}
	return PortMatch{}, false
}

func (n *normalizer) portRange(field string, start, end int32) (l4.Range, bool) {
	first, ok1 := n.portNumber(field+".start", start)
	last, ok2 := n.portNumber(field+".end", end)
	if !ok1 || !ok2 {
		return l4.Range{}, false
	}
	if first >= last {
		n.r.Errorf(field, "start (%d) must be less than end (%d)", first, last)
		return l4.Range{}, false
	}
	return l4.Range{First: first, Last: last}, true
}

func quoteList(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", s)
	}
	return out
}

// count is how many of the "field is set" flags are true.
func count(set ...bool) int {
	c := 0
	for _, b := range set {
		if b {
			c++
		}
	}
	return c
}
