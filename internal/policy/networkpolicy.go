package policy

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/netpol/netpol/internal/l4"
)

// networkPolicy normalises a networking.k8s.io/v1 NetworkPolicy (or the
// extensions/v1beta1 one of the original proposal).
//
// One with errors is kept in its fail-closed form (Policy.Invalid), never
// left out: left out, it would stop isolating its pods, and any value the
// API server stores that netpol cannot read would open them to everyone.
// So an unreadable rule allows nothing (failClosed), an unreadable pod
// selector selects every pod of the namespace, and an unknown policy type
// isolates both directions; what it can read stays as written.
func (n *normalizer) networkPolicy(np *networkingv1.NetworkPolicy) *Policy {
	if np.Namespace == "" {
		np.Namespace = "default"
		n.obj.Namespace = "default"
	}
	// The proposal's v1beta1 API read an empty from/ports list as "nothing";
	// networking.k8s.io/v1 reads it as "everything" (and the API server
	// cannot even store the difference).
	legacy := np.APIVersion == "extensions/v1beta1"
	p := &Policy{Ref: n.ref(KindNetworkPolicy), Origin: n.obj.Origin, Tier: TierNetworkPolicy}
	before := n.errors()
	p.Subject = PodSelector{
		Namespaces: NamespaceSelector{Match: NamespaceName, Name: np.Namespace},
		Pods:       n.selector("spec.podSelector", &np.Spec.PodSelector),
	}
	if n.errors() > before {
		p.Subject.Pods = Everything
	}
	if len(np.Spec.PolicyTypes) == 0 {
		// Defaulting: Ingress always; Egress iff there are egress rules.
		p.Isolates[Ingress] = true
		p.Isolates[Egress] = len(np.Spec.Egress) > 0
	}
	for i, t := range np.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			p.Isolates[Ingress] = true
		case networkingv1.PolicyTypeEgress:
			p.Isolates[Egress] = true
		default:
			n.r.Errorf(idx("spec.policyTypes", i), "unsupported value %q: supported values: \"Ingress\", \"Egress\"", t)
			p.Isolates[Ingress], p.Isolates[Egress] = true, true
		}
	}
	for i, rule := range np.Spec.Ingress {
		field := idx("spec.ingress", i)
		r := &Rule{Policy: p, Dir: Ingress, Index: i, Action: Allow}
		before := n.errors()
		n.npPeers(r, field+".from", rule.From, legacy, np.Namespace)
		n.npPorts(r, field+".ports", rule.Ports, legacy)
		if n.errors() > before {
			failClosed(r)
		}
		p.Rules[Ingress] = append(p.Rules[Ingress], r)
	}
	for i, rule := range np.Spec.Egress {
		field := idx("spec.egress", i)
		r := &Rule{Policy: p, Dir: Egress, Index: i, Action: Allow}
		before := n.errors()
		n.npPeers(r, field+".to", rule.To, legacy, np.Namespace)
		n.npPorts(r, field+".ports", rule.Ports, legacy)
		if n.errors() > before {
			failClosed(r)
		}
		p.Rules[Egress] = append(p.Rules[Egress], r)
	}
	p.Invalid = n.errors() > 0
	for _, d := range []Direction{Ingress, Egress} {
		if len(p.Rules[d]) > 0 && !p.Isolates[d] {
			n.r.Warnf("spec.policyTypes", "has %s rules but does not list %s: the rules have no effect", d, map[Direction]string{Ingress: "Ingress", Egress: "Egress"}[d])
		}
	}
	return p
}

func (n *normalizer) npPeers(r *Rule, field string, peers []networkingv1.NetworkPolicyPeer, legacy bool, namespace string) {
	if peers == nil || (len(peers) == 0 && !legacy) {
		if peers != nil {
			n.r.Warnf(field, "an empty list matches every peer in networking.k8s.io/v1, like no list at all")
		}
		r.AllPeers = true
		return
	}
	for j, peer := range peers {
		pf := idx(field, j)
		switch {
		case peer.IPBlock != nil:
			if peer.PodSelector != nil || peer.NamespaceSelector != nil {
				n.r.Errorf(pf, "may not specify both ipBlock and another peer")
				continue
			}
			if b, ok := n.ipBlock(pf+".ipBlock", peer.IPBlock); ok {
				r.Peers = append(r.Peers, Peer{Kind: PeerIPBlock, Index: j, Block: b})
			}
		case peer.PodSelector == nil && peer.NamespaceSelector == nil:
			n.r.Errorf(pf, "must specify a peer")
		default:
			sel := PodSelector{Namespaces: NamespaceSelector{Match: NamespaceName, Name: namespace}, Pods: Everything}
			if peer.NamespaceSelector != nil {
				sel.Namespaces = NamespaceSelector{Match: NamespaceLabels, Selector: n.selector(pf+".namespaceSelector", peer.NamespaceSelector)}
			}
			if peer.PodSelector != nil {
				sel.Pods = n.selector(pf+".podSelector", peer.PodSelector)
			}
			r.Peers = append(r.Peers, Peer{Kind: PeerPods, Index: j, Pods: sel})
		}
	}
}

func (n *normalizer) ipBlock(field string, b *networkingv1.IPBlock) (IPBlock, bool) {
	cidr, ok := n.cidr(field+".cidr", b.CIDR)
	if !ok {
		return IPBlock{}, false
	}
	out := IPBlock{CIDR: cidr}
	for k, e := range b.Except {
		ef := idx(field+".except", k)
		ex, ok := n.cidr(ef, e)
		if !ok {
			return IPBlock{}, false
		}
		if ex.Addr().Is4() != cidr.Addr().Is4() || ex.Bits() <= cidr.Bits() || !cidr.Contains(ex.Addr()) {
			n.r.Errorf(ef, "must be a strict subset of %s", cidr)
			return IPBlock{}, false
		}
		out.Except = append(out.Except, ex)
	}
	return out, true
}

func (n *normalizer) npPorts(r *Rule, field string, ports []networkingv1.NetworkPolicyPort, legacy bool) {
	if ports == nil || (len(ports) == 0 && !legacy) {
		if ports != nil {
			n.r.Warnf(field, "an empty list matches every port in networking.k8s.io/v1, like no list at all")
		}
		r.AllPorts = true
		return
	}
	for j, port := range ports {
		pf := idx(field, j)
		proto := l4.TCP
		if port.Protocol != nil {
			var ok bool
			if proto, ok = n.protocol(pf+".protocol", string(*port.Protocol)); !ok {
				continue
			}
		}
		switch {
		case port.Port == nil:
			if port.EndPort != nil {
				n.r.Errorf(pf+".endPort", "may not be specified when port is not specified")
				continue
			}
			r.Ports = append(r.Ports, PortMatch{Range: l4.AllPorts(proto)})
		case port.Port.Type == intstr.String:
			if port.EndPort != nil {
				n.r.Errorf(pf+".endPort", "may not be specified when port is a named port (%q)", port.Port.StrVal)
				continue
			}
			if n.portName(pf+".port", port.Port.StrVal) {
				r.Ports = append(r.Ports, PortMatch{Named: port.Port.StrVal, NamedProto: proto})
			}
		default:
			first, ok := n.portNumber(pf+".port", port.Port.IntVal)
			if !ok {
				continue
			}
			last := first
			if port.EndPort != nil {
				if last, ok = n.portNumber(pf+".endPort", *port.EndPort); !ok {
					continue
				}
				if last < first {
					n.r.Errorf(pf+".endPort", "must be greater than or equal to port (%d), got %d", first, last)
					continue
				}
			}
			r.Ports = append(r.Ports, PortMatch{Range: l4.Range{Proto: proto, First: first, Last: last}})
		}
	}
	if len(r.Ports) == 0 && len(ports) > 0 {
		// Every clause was invalid and reported; match nothing rather than all.
		r.Ports = []PortMatch{}
	}
}
