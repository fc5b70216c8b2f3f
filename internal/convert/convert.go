// Package convert rewrites the admin policies of network-policy-api
// v0.1.x, AdminNetworkPolicy and BaselineAdminNetworkPolicy (the released
// v1alpha1 shape and the KEP-2091 shape), as the ClusterNetworkPolicies of
// v0.2.0 (v1alpha2) that replaced them. It works on decoded objects and
// returns API objects; what they mean is not its to prove: netpol convert
// builds the engine with them and with the originals and compares the two
// (package diff). It imports source, diag and the API types, and nothing
// imports it but cli and tests.
//
// What carries over, field by field: the name, labels and annotations (the
// comments of intent kubectl keeps on an object; not its stale
// last-applied-configuration), the priority (a BaselineAdminNetworkPolicy
// takes BaselinePriority, the last of the Baseline tier, where it stood),
// the subject, and each rule in its order with its name, action (Allow
// becomes Accept), peers and ports (a port number, range or name becomes
// the protocols entry that says the same). What a ClusterNetworkPolicy
// cannot say is reported, never approximated: the KEP shape's sameLabels,
// notSameLabels and related, more rules, peers or ports than its limits
// (25 each), a name another ClusterNetworkPolicy has, and a place among
// policies of equal priority that the change of kind would move.
package convert

import (
	"cmp"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha2"

	"github.com/netpol/netpol/internal/apis/kep"
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// BaselinePriority is the priority a BaselineAdminNetworkPolicy takes as
// a ClusterNetworkPolicy: the last a policy can have. The
// BaselineAdminNetworkPolicy was evaluated after every Baseline-tier
// ClusterNetworkPolicy; one of those at 1000 too is reported when the
// names would put it after the converted policy.
const BaselinePriority = 1000

// ConvertedFrom is the annotation that names what a policy was converted
// from ("AdminNetworkPolicy/NAME"), for the reviewer of the change.
const ConvertedFrom = "netpol.io/converted-from"

// maxItems is ClusterNetworkPolicy's limit on rules per direction, peers
// per rule and protocols per rule (the CRD's MaxItems).
const maxItems = 25

// Result is what ToClusterNetworkPolicies made of the input.
type Result struct {
	// Policies are the ClusterNetworkPolicies, one per admin policy, in
	// the input's order.
	Policies []*v1alpha2.ClusterNetworkPolicy
	// Replaced are the objects they replace, index-aligned.
	Replaced []source.Object
	// Problems are what ClusterNetworkPolicy cannot say, each at its
	// object and field. With any, the conversion does not hold: Policies
	// are what could be written, for the reader, not for applying.
	Problems diag.List
}

// ToClusterNetworkPolicies converts every AdminNetworkPolicy and
// BaselineAdminNetworkPolicy of objects; the ClusterNetworkPolicies among
// them are read to keep names apart and places among equal priorities.
func ToClusterNetworkPolicies(objects []source.Object) Result {
	var r Result
	existing := map[string]source.Object{} // ClusterNetworkPolicies by name
	for _, o := range objects {
		if _, ok := o.Value.(*v1alpha2.ClusterNetworkPolicy); ok {
			existing[o.Name] = o
		}
	}
	for _, o := range objects {
		c := converter{r: o.Reporter(&r.Problems), from: o.Kind}
		var cnp *v1alpha2.ClusterNetworkPolicy
		switch v := o.Value.(type) {
		case *v1alpha1.AdminNetworkPolicy:
			cnp = c.policy(v.ObjectMeta, v1alpha2.AdminTier, v.Spec.Priority, v.Spec.Subject)
			for i, rule := range v.Spec.Ingress {
				cnp.Spec.Ingress = append(cnp.Spec.Ingress, c.ingress(i, rule.Name, string(rule.Action), rule.Ports, anpIngressPeers(rule.From)))
			}
			for i, rule := range v.Spec.Egress {
				cnp.Spec.Egress = append(cnp.Spec.Egress, c.egress(i, rule.Name, string(rule.Action), rule.Ports, anpEgressPeers(rule.To)))
			}
		case *v1alpha1.BaselineAdminNetworkPolicy:
			cnp = c.policy(v.ObjectMeta, v1alpha2.BaselineTier, BaselinePriority, v.Spec.Subject)
			for i, rule := range v.Spec.Ingress {
				cnp.Spec.Ingress = append(cnp.Spec.Ingress, c.ingress(i, rule.Name, string(rule.Action), rule.Ports, anpIngressPeers(rule.From)))
			}
			for i, rule := range v.Spec.Egress {
				cnp.Spec.Egress = append(cnp.Spec.Egress, c.egress(i, rule.Name, string(rule.Action), rule.Ports, banpEgressPeers(rule.To)))
			}
		case *kep.AdminNetworkPolicy:
			cnp = c.policy(v.ObjectMeta, v1alpha2.AdminTier, v.Spec.Priority, v.Spec.Subject)
			c.kepRules(cnp, v.Spec.Ingress, v.Spec.Egress)
		case *kep.BaselineAdminNetworkPolicy:
			cnp = c.policy(v.ObjectMeta, v1alpha2.BaselineTier, BaselinePriority, v.Spec.Subject)
			c.kepRules(cnp, v.Spec.Ingress, v.Spec.Egress)
		default:
			continue
		}
		c.limits(cnp)
		if other, ok := existing[cnp.Name]; ok {
			c.r.Errorf("metadata.name", "a ClusterNetworkPolicy %s exists already (%s): rename one of them first", cnp.Name, other.Origin)
		}
		existing[cnp.Name] = o
		r.Policies = append(r.Policies, cnp)
		r.Replaced = append(r.Replaced, o)
	}
	r.checkPlaces(objects)
	return r
}

// converter converts one object, reporting what it cannot carry over.
type converter struct {
	r    diag.Reporter
	from string // the kind converted
}

func (c *converter) policy(m metav1.ObjectMeta, tier v1alpha2.Tier, priority int32, s v1alpha1.AdminNetworkPolicySubject) *v1alpha2.ClusterNetworkPolicy {
	meta := metav1.ObjectMeta{Name: m.Name, Labels: maps.Clone(m.Labels), Annotations: maps.Clone(m.Annotations)}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	// kubectl's copy of the object as last applied is the old object: kept,
	// it would make kubectl apply's next three-way merge wrong.
	delete(meta.Annotations, corev1.LastAppliedConfigAnnotation)
	meta.Annotations[ConvertedFrom] = c.from + "/" + m.Name
	cnp := &v1alpha2.ClusterNetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha2.GroupVersion.String(), Kind: "ClusterNetworkPolicy"},
		ObjectMeta: meta,
		Spec:       v1alpha2.ClusterNetworkPolicySpec{Tier: tier, Priority: priority},
	}
	cnp.Spec.Subject.Namespaces = s.Namespaces
	if s.Pods != nil {
		cnp.Spec.Subject.Pods = &v1alpha2.NamespacedPod{NamespaceSelector: s.Pods.NamespaceSelector, PodSelector: s.Pods.PodSelector}
	}
	return cnp
}

// peer is an admin peer of either v1alpha1 direction, field by field.
type peer struct {
	namespaces  *metav1.LabelSelector
	pods        *v1alpha1.NamespacedPod
	nodes       *metav1.LabelSelector
	networks    []v1alpha1.CIDR
	domainNames []v1alpha1.DomainName
}

func anpIngressPeers(ps []v1alpha1.AdminNetworkPolicyIngressPeer) []peer {
	out := make([]peer, 0, len(ps))
	for _, p := range ps {
		out = append(out, peer{namespaces: p.Namespaces, pods: p.Pods})
	}
	return out
}

func anpEgressPeers(ps []v1alpha1.AdminNetworkPolicyEgressPeer) []peer {
	out := make([]peer, 0, len(ps))
	for _, p := range ps {
		out = append(out, peer{namespaces: p.Namespaces, pods: p.Pods, nodes: p.Nodes, networks: p.Networks, domainNames: p.DomainNames})
	}
	return out
}

func banpEgressPeers(ps []v1alpha1.BaselineAdminNetworkPolicyEgressPeer) []peer {
	out := make([]peer, 0, len(ps))
	for _, p := range ps {
		out = append(out, peer{namespaces: p.Namespaces, pods: p.Pods, nodes: p.Nodes, networks: p.Networks})
	}
	return out
}

func pods(p *v1alpha1.NamespacedPod) *v1alpha2.NamespacedPod {
	if p == nil {
		return nil
	}
	return &v1alpha2.NamespacedPod{NamespaceSelector: p.NamespaceSelector, PodSelector: p.PodSelector}
}

// action spells an admin action as ClusterNetworkPolicy does.
func action(a string) v1alpha2.ClusterNetworkPolicyRuleAction {
	if a == "Allow" {
		return v1alpha2.ClusterNetworkPolicyRuleActionAccept
	}
	return v1alpha2.ClusterNetworkPolicyRuleAction(a) // Deny, Pass
}

func (c *converter) ingress(i int, name, act string, ports *[]v1alpha1.AdminNetworkPolicyPort, from []peer) v1alpha2.ClusterNetworkPolicyIngressRule {
	rule := v1alpha2.ClusterNetworkPolicyIngressRule{Name: name, Action: action(act), Protocols: protocols(ports)}
	for _, p := range from {
		rule.From = append(rule.From, v1alpha2.ClusterNetworkPolicyIngressPeer{Namespaces: p.namespaces, Pods: pods(p.pods)})
	}
	c.rule(fmt.Sprintf("spec.ingress[%d]", i), "from", len(from), ports)
	return rule
}

func (c *converter) egress(i int, name, act string, ports *[]v1alpha1.AdminNetworkPolicyPort, to []peer) v1alpha2.ClusterNetworkPolicyEgressRule {
	rule := v1alpha2.ClusterNetworkPolicyEgressRule{Name: name, Action: action(act), Protocols: protocols(ports)}
	for _, p := range to {
		out := v1alpha2.ClusterNetworkPolicyEgressPeer{Namespaces: p.namespaces, Pods: pods(p.pods), Nodes: p.nodes}
		for _, n := range p.networks {
			out.Networks = append(out.Networks, v1alpha2.CIDR(n))
		}
		for _, d := range p.domainNames {
			out.DomainNames = append(out.DomainNames, v1alpha2.DomainName(d))
		}
		rule.To = append(rule.To, out)
	}
	c.rule(fmt.Sprintf("spec.egress[%d]", i), "to", len(to), ports)
	return rule
}

// rule reports peers and ports past ClusterNetworkPolicy's limits.
func (c *converter) rule(field, peersField string, peers int, ports *[]v1alpha1.AdminNetworkPolicyPort) {
	if peers > maxItems {
		c.r.Errorf(field+"."+peersField, "%d peers: a ClusterNetworkPolicy rule takes at most %d; split the rule (the next keeps its place)", peers, maxItems)
	}
	if ports != nil && len(*ports) > maxItems {
		c.r.Errorf(field+".ports", "%d ports: a ClusterNetworkPolicy rule takes at most %d protocols entries; merge ports into ranges or split the rule", len(*ports), maxItems)
	}
}

// limits reports rules past ClusterNetworkPolicy's limit.
func (c *converter) limits(cnp *v1alpha2.ClusterNetworkPolicy) {
	for _, d := range []struct {
		field string
		n     int
	}{{"spec.ingress", len(cnp.Spec.Ingress)}, {"spec.egress", len(cnp.Spec.Egress)}} {
		if d.n > maxItems {
			c.r.Errorf(d.field, "%d rules: a ClusterNetworkPolicy takes at most %d per direction; split the policy across priorities", d.n, maxItems)
		}
	}
}

// protocols is the protocols list that matches what ports does: nil
// (every port) for nil.
func protocols(ports *[]v1alpha1.AdminNetworkPolicyPort) []v1alpha2.ClusterNetworkPolicyProtocol {
	if ports == nil {
		return nil
	}
	out := make([]v1alpha2.ClusterNetworkPolicyProtocol, 0, len(*ports))
	for _, p := range *ports {
		switch {
		case p.PortNumber != nil:
			out = append(out, protocol(p.PortNumber.Protocol, &v1alpha2.Port{Number: p.PortNumber.Port}))
		case p.NamedPort != nil:
			out = append(out, v1alpha2.ClusterNetworkPolicyProtocol{DestinationNamedPort: *p.NamedPort})
		case p.PortRange != nil:
			out = append(out, protocol(p.PortRange.Protocol, &v1alpha2.Port{Range: &v1alpha2.PortRange{Start: p.PortRange.Start, End: p.PortRange.End}}))
		}
	}
	return out
}

// protocol is one protocols entry; v1alpha1 defaults the protocol to TCP.
func protocol(p corev1.Protocol, dp *v1alpha2.Port) v1alpha2.ClusterNetworkPolicyProtocol {
	switch p {
	case corev1.ProtocolUDP:
		return v1alpha2.ClusterNetworkPolicyProtocol{UDP: &v1alpha2.ClusterNetworkPolicyProtocolUDP{DestinationPort: dp}}
	case corev1.ProtocolSCTP:
		return v1alpha2.ClusterNetworkPolicyProtocol{SCTP: &v1alpha2.ClusterNetworkPolicyProtocolSCTP{DestinationPort: dp}}
	}
	return v1alpha2.ClusterNetworkPolicyProtocol{TCP: &v1alpha2.ClusterNetworkPolicyProtocolTCP{DestinationPort: dp}}
}

// kepRules converts the rules of the KEP shape, whose peers select
// namespaces in ways ClusterNetworkPolicy has no words for.
func (c *converter) kepRules(cnp *v1alpha2.ClusterNetworkPolicy, ingress, egress []kep.Rule) {
	for i, rule := range ingress {
		field := fmt.Sprintf("spec.ingress[%d].from", i)
		cnp.Spec.Ingress = append(cnp.Spec.Ingress, c.ingress(i, rule.Name, rule.Action, rule.Ports, c.kepPeers(field, rule.From)))
	}
	for i, rule := range egress {
		field := fmt.Sprintf("spec.egress[%d].to", i)
		cnp.Spec.Egress = append(cnp.Spec.Egress, c.egress(i, rule.Name, rule.Action, rule.Ports, c.kepPeers(field, rule.To)))
	}
}

func (c *converter) kepPeers(field string, ps []kep.Peer) []peer {
	out := make([]peer, 0, len(ps))
	for j, p := range ps {
		f := fmt.Sprintf("%s[%d]", field, j)
		switch {
		case p.Namespaces != nil:
			out = append(out, peer{namespaces: c.kepNamespaces(f+".namespaces", p.Namespaces)})
		case p.Pods != nil:
			sel := c.kepNamespaces(f+".pods.namespaces", &p.Pods.Namespaces)
			if sel == nil {
				sel = &metav1.LabelSelector{}
			}
			out = append(out, peer{pods: &v1alpha1.NamespacedPod{NamespaceSelector: *sel, PodSelector: p.Pods.PodSelector}})
		default:
			out = append(out, peer{})
		}
	}
	return out
}

// kepNamespaces is the namespace selector a KEP peer's namespaces field
// is, or nil with the problem reported.
func (c *converter) kepNamespaces(field string, n *kep.NamespacedPeer) *metav1.LabelSelector {
	switch {
	case n.NamespaceSelector != nil:
		return n.NamespaceSelector
	case n.Related != nil:
		c.r.Errorf(field+".related", "%s: a ClusterNetworkPolicy cannot select namespaces relative to the subject's own; write one policy per namespace with a namespaceSelector on kubernetes.io/metadata.name", *n.Related)
	case n.SameLabels != nil:
		c.r.Errorf(field+".sameLabels", "a ClusterNetworkPolicy cannot match namespaces that share the subject namespace's labels; write one policy per value of the labels")
	case n.NotSameLabels != nil:
		c.r.Errorf(field+".notSameLabels", "a ClusterNetworkPolicy cannot match namespaces that differ from the subject namespace's labels; write one policy per value of the labels")
	}
	return nil
}

// checkPlaces reports converted policies whose place among policies of
// their tier and priority moves: the engine orders equal priorities by
// kind (AdminNetworkPolicy before ClusterNetworkPolicy, the
// BaselineAdminNetworkPolicy last) and then by name, and after the
// conversion only names are left to order them. The API leaves such an
// order undefined, so a policy whose verdicts depend on it is better
// given a priority of its own than converted silently.
func (r *Result) checkPlaces(objects []source.Object) {
	type slot struct {
		tier     v1alpha2.Tier
		priority int32
	}
	others := map[slot][]string{} // the input's ClusterNetworkPolicies
	for _, o := range objects {
		if v, ok := o.Value.(*v1alpha2.ClusterNetworkPolicy); ok {
			s := slot{v.Spec.Tier, v.Spec.Priority}
			others[s] = append(others[s], v.Name)
		}
	}
	for i, cnp := range r.Policies {
		o := r.Replaced[i]
		for _, name := range others[slot{cnp.Spec.Tier, cnp.Spec.Priority}] {
			// Before: an AdminNetworkPolicy came first, the Baseline one last.
			wasFirst := cnp.Spec.Tier == v1alpha2.AdminTier
			if isFirst := cmp.Less(cnp.Name, name); isFirst != wasFirst {
				where := "before"
				if wasFirst {
					where = "after"
				}
				o.Reporter(&r.Problems).Errorf("spec.priority", "converted to priority %d, it would come %s ClusterNetworkPolicy %s of the same priority (by name), not where it stands today; give one of them a priority of its own first",
					cnp.Spec.Priority, where, name)
			}
		}
	}
}
