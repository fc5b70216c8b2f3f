package policy

import (
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha2"

	"github.com/netpol/netpol/internal/apis/kep"
)

// Each API is copied into adminSpec; the limits are those of its CRD.

var (
	anpLimits  = adminLimits{rules: 100, peers: 100, ports: 100, actions: []string{"Allow", "Deny", "Pass"}}
	banpLimits = adminLimits{rules: 100, peers: 100, ports: 100, actions: []string{"Allow", "Deny"}}
	// ClusterNetworkPolicy allows Pass in both tiers: in Baseline it ends
	// the tier and leaves the default to decide.
	cnpLimits = adminLimits{rules: 25, peers: 25, ports: 25, actions: []string{"Accept", "Deny", "Pass"}}
)

func (n *normalizer) adminNetworkPolicy(v *v1alpha1.AdminNetworkPolicy) *Policy {
	spec := adminSpec{kind: KindAdminNetworkPolicy, tier: TierAdmin, priority: n.priority("spec.priority", v.Spec.Priority), limits: anpLimits,
		subject: adminSubject{namespaces: v.Spec.Subject.Namespaces, pods: v.Spec.Subject.Pods}}
	for _, r := range v.Spec.Ingress {
		spec.rules[Ingress] = append(spec.rules[Ingress], adminRule{name: r.Name, action: string(r.Action), ports: r.Ports,
			peersSet: r.From != nil, peers: ingressPeers(r.From)})
	}
	for _, r := range v.Spec.Egress {
		raw := adminRule{name: r.Name, action: string(r.Action), ports: r.Ports, peersSet: r.To != nil}
		for _, p := range r.To {
			raw.peers = append(raw.peers, adminPeer{namespaces: p.Namespaces, pods: p.Pods, nodes: p.Nodes,
				networks: stringsOf(p.Networks), domainNames: stringsOf(p.DomainNames)})
		}
		spec.rules[Egress] = append(spec.rules[Egress], raw)
	}
	return n.admin(spec)
}

func (n *normalizer) baselineAdminNetworkPolicy(v *v1alpha1.BaselineAdminNetworkPolicy) *Policy {
	n.banpName()
	spec := adminSpec{kind: KindBaselineAdminPolicy, tier: TierBaseline, priority: baselineAdminPriority, limits: banpLimits,
		subject: adminSubject{namespaces: v.Spec.Subject.Namespaces, pods: v.Spec.Subject.Pods}}
	for _, r := range v.Spec.Ingress {
		spec.rules[Ingress] = append(spec.rules[Ingress], adminRule{name: r.Name, action: string(r.Action), ports: r.Ports,
			peersSet: r.From != nil, peers: ingressPeers(r.From)})
	}
	for _, r := range v.Spec.Egress {
		raw := adminRule{name: r.Name, action: string(r.Action), ports: r.Ports, peersSet: r.To != nil}
		for _, p := range r.To {
			raw.peers = append(raw.peers, adminPeer{namespaces: p.Namespaces, pods: p.Pods, nodes: p.Nodes, networks: stringsOf(p.Networks)})
		}
		spec.rules[Egress] = append(spec.rules[Egress], raw)
	}
	return n.admin(spec)
}

func (n *normalizer) kepAdminNetworkPolicy(v *kep.AdminNetworkPolicy) *Policy {
	spec := adminSpec{kind: KindAdminNetworkPolicy, tier: TierAdmin, priority: n.priority("spec.priority", v.Spec.Priority), limits: anpLimits,
		subject: adminSubject{namespaces: v.Spec.Subject.Namespaces, pods: v.Spec.Subject.Pods}}
	spec.rules = kepRules(v.Spec.Ingress, v.Spec.Egress)
	return n.admin(spec)
}

func (n *normalizer) kepBaselineAdminNetworkPolicy(v *kep.BaselineAdminNetworkPolicy) *Policy {
	n.banpName()
	spec := adminSpec{kind: KindBaselineAdminPolicy, tier: TierBaseline, priority: baselineAdminPriority, limits: banpLimits,
		subject: adminSubject{namespaces: v.Spec.Subject.Namespaces, pods: v.Spec.Subject.Pods}}
	spec.rules = kepRules(v.Spec.Ingress, v.Spec.Egress)
	return n.admin(spec)
}

func (n *normalizer) clusterNetworkPolicy(v *v1alpha2.ClusterNetworkPolicy) *Policy {
	spec := adminSpec{kind: KindClusterNetworkPolicy, priority: n.priority("spec.priority", v.Spec.Priority), limits: cnpLimits,
		subject: adminSubject{namespaces: v.Spec.Subject.Namespaces}}
	switch v.Spec.Tier {
	case v1alpha2.AdminTier:
		spec.tier = TierAdmin
	case v1alpha2.BaselineTier:
		spec.tier = TierBaseline
	default: // left 0: admin makes it the first tier
		n.r.Errorf("spec.tier", "unsupported value %q: supported values: \"Admin\", \"Baseline\"", v.Spec.Tier)
	}
	if v.Spec.Subject.Pods != nil {
		spec.subject.pods = &v1alpha1.NamespacedPod{NamespaceSelector: v.Spec.Subject.Pods.NamespaceSelector, PodSelector: v.Spec.Subject.Pods.PodSelector}
	}
	for _, r := range v.Spec.Ingress {
		raw := adminRule{name: r.Name, action: string(r.Action), protocols: r.Protocols, peersSet: r.From != nil}
		for _, p := range r.From {
			raw.peers = append(raw.peers, adminPeer{namespaces: p.Namespaces, pods: cnpPods(p.Pods)})
		}
		spec.rules[Ingress] = append(spec.rules[Ingress], raw)
	}
	for _, r := range v.Spec.Egress {
		raw := adminRule{name: r.Name, action: string(r.Action), protocols: r.Protocols, peersSet: r.To != nil}
		for _, p := range r.To {
			raw.peers = append(raw.peers, adminPeer{namespaces: p.Namespaces, pods: cnpPods(p.Pods), nodes: p.Nodes,
				networks: stringsOf(p.Networks), domainNames: stringsOf(p.DomainNames)})
		}
		spec.rules[Egress] = append(spec.rules[Egress], raw)
	}
	return n.admin(spec)
}

func (n *normalizer) banpName() {
	if n.obj.Name != "default" {
		n.r.Errorf("metadata.name", "Only one baseline admin network policy with metadata.name=\"default\" can be created in the cluster (got %q)", n.obj.Name)
	}
}

func ingressPeers(from []v1alpha1.AdminNetworkPolicyIngressPeer) []adminPeer {
	var out []adminPeer
	for _, p := range from {
		out = append(out, adminPeer{namespaces: p.Namespaces, pods: p.Pods})
	}
	return out
}

func kepRules(ingress, egress []kep.Rule) (rules [2][]adminRule) {
	for d, list := range [2][]kep.Rule{Ingress: ingress, Egress: egress} {
		for _, r := range list {
			peers, other, otherName := r.From, r.To, "to"
			if Direction(d) == Egress {
				peers, other, otherName = r.To, r.From, "from"
			}
			raw := adminRule{name: r.Name, action: r.Action, ports: r.Ports, peersSet: peers != nil}
			if other != nil {
				raw.wrongDirection = otherName
			}
			for i := range peers {
				raw.peers = append(raw.peers, adminPeer{kepNamespaces: peers[i].Namespaces, kepPods: peers[i].Pods})
			}
			rules[d] = append(rules[d], raw)
		}
	}
	return rules
}

func cnpPods(p *v1alpha2.NamespacedPod) *v1alpha1.NamespacedPod {
	if p == nil {
		return nil
	}
	return &v1alpha1.NamespacedPod{NamespaceSelector: p.NamespaceSelector, PodSelector: p.PodSelector}
}

// strings copies a list of string-typed API values (CIDRs, domain names),
// keeping nil apart from empty: an empty list is a validation error.
func stringsOf[T ~string](in []T) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, c := range in {
		out[i] = string(c)
	}
	return out
}
