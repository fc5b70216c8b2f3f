package suggest

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// The admin tiers have no implicit isolation: a workload's policy allows
// what was observed and then denies the rest itself, both ways, as the
// NetworkPolicy output isolates both ways. Their ingress peers are pods
// only (the API has no networks for sources), so a source outside the
// cluster is neither allowed nor denied by them: it is left to the tiers
// below, as it was.

// The API's limits (v0.1.7 CRDs): rules per direction, peers per rule,
// networks per peer, characters in a rule name, the highest priority.
const (
	maxAdminRules    = 100
	maxAdminPeers    = 100
	maxAdminNetworks = 25
	maxRuleName      = 100
	maxPriority      = 1000
)

// everyAddress is what a Deny for "everything else" sends to: networks
// match pods' addresses too, so these two are every destination.
var everyAddress = []v1alpha1.CIDR{"0.0.0.0/0", "::/0"}

// adminPolicies writes one AdminNetworkPolicy per workload, priorities in
// order from opts.Priority: policies of equal priority whose subjects
// overlap are undefined in the API, and a workload's subject selector may
// select another workload's pods too.
func adminPolicies(plans []*workloadPlan, opts Options) ([]Policy, error) {
	if last := int(opts.Priority) + len(plans) - 1; len(plans) > 0 && (opts.Priority < 0 || last > maxPriority) {
		return nil, fmt.Errorf("%d workloads need the priorities %d to %d, one each, and an AdminNetworkPolicy's is from 0 to %d: choose another first priority, or another tier",
			len(plans), opts.Priority, last, maxPriority)
	}
	var out []Policy
	for i, p := range plans {
		w := p.w
		anp := &v1alpha1.AdminNetworkPolicy{
			TypeMeta: metav1.TypeMeta{APIVersion: "policy.networking.k8s.io/v1alpha1", Kind: "AdminNetworkPolicy"},
			// Cluster-scoped: the namespace goes into the name, after a dot,
			// which no namespace name holds, so two names never meet.
			ObjectMeta: metav1.ObjectMeta{Name: w.namespace + "." + p.name, Annotations: annotations(p.flows, opts)},
			Spec: v1alpha1.AdminNetworkPolicySpec{
				Priority: opts.Priority + int32(i),
				Subject:  v1alpha1.AdminNetworkPolicySubject{Pods: namespacedPod(w)},
			},
		}
		var in, eg []adminPeer
		for _, k := range p.ingress {
			if k.w != nil {
				in = append(in, adminPeer{w: k.w, ports: adminPorts(w.pods, k.ports)})
			}
		}
		for _, k := range p.egress {
			eg = append(eg, adminPeer{w: k.w, addr: k.addr, ports: adminPorts(k.pods(), k.ports)})
		}
		ingress, egress, err := adminRules(in, eg)
		if err != nil {
			return nil, fmt.Errorf("AdminNetworkPolicy %s: %w", anp.Name, err)
		}
		for _, r := range ingress {
			anp.Spec.Ingress = append(anp.Spec.Ingress, v1alpha1.AdminNetworkPolicyIngressRule{
				Name: r.name, Action: v1alpha1.AdminNetworkPolicyRuleAction(r.action), From: r.ingressPeers(), Ports: r.portsOrNil()})
		}
		for _, r := range egress {
			var to []v1alpha1.AdminNetworkPolicyEgressPeer
			for _, pe := range r.ingressPeers() {
				to = append(to, v1alpha1.AdminNetworkPolicyEgressPeer{Pods: pe.Pods})
			}
			for _, nets := range r.networkPeers() {
				to = append(to, v1alpha1.AdminNetworkPolicyEgressPeer{Networks: nets})
			}
			anp.Spec.Egress = append(anp.Spec.Egress, v1alpha1.AdminNetworkPolicyEgressRule{
				Name: r.name, Action: v1alpha1.AdminNetworkPolicyRuleAction(r.action), To: to, Ports: r.portsOrNil()})
		}
		out = append(out, anp)
	}
	return out, nil
}

// baselinePolicy writes the BaselineAdminNetworkPolicy "default" (the API
// takes no other name). It has one subject, the workloads' namespaces, so
// a peer's rule allows it towards (or from) every pod of those
// namespaces, not only the workload it was observed with: each peer's
// rule carries the ports observed with it over all the workloads, which is
// as precise as one subject lets a rule be. nil when no workload has a
// flow.
func baselinePolicy(plans []*workloadPlan, flows []Flow, opts Options) (*v1alpha1.BaselineAdminNetworkPolicy, error) {
	if len(plans) == 0 {
		return nil, nil
	}
	var namespaces []string
	var in, eg []adminPeer
	inAt, egAt := map[peerKey]int{}, map[peerKey]int{}
	merge := func(peers *[]adminPeer, at map[peerKey]int, k peerKey, ports []v1alpha1.AdminNetworkPolicyPort) {
		i, ok := at[k]
		if !ok {
			i = len(*peers)
			at[k] = i
			*peers = append(*peers, adminPeer{w: k.w, addr: k.addr})
		}
		for _, pt := range ports {
			if !containsPort((*peers)[i].ports, pt) {
				(*peers)[i].ports = append((*peers)[i].ports, pt)
			}
		}
	}
	for _, p := range plans {
		if len(namespaces) == 0 || namespaces[len(namespaces)-1] != p.w.namespace {
			namespaces = append(namespaces, p.w.namespace) // plans are sorted by namespace
		}
		for _, k := range p.ingress {
			if k.w != nil {
				merge(&in, inAt, k.peerKey, adminPorts(p.w.pods, k.ports))
			}
		}
		for _, k := range p.egress {
			merge(&eg, egAt, k.peerKey, adminPorts(k.pods(), k.ports))
		}
	}
	sortPeers := func(peers []adminPeer) {
		sort.SliceStable(peers, func(i, j int) bool { return peers[i].order() < peers[j].order() })
	}
	sortPeers(in)
	sortPeers(eg)
	ingress, egress, err := adminRules(in, eg)
	if err != nil {
		return nil, fmt.Errorf("BaselineAdminNetworkPolicy default: %w", err)
	}
	banp := &v1alpha1.BaselineAdminNetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy.networking.k8s.io/v1alpha1", Kind: "BaselineAdminNetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: annotations(flows, opts)},
		Spec: v1alpha1.BaselineAdminNetworkPolicySpec{Subject: v1alpha1.AdminNetworkPolicySubject{
			Namespaces: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: namespaces}}}}},
	}
	for _, r := range ingress {
		banp.Spec.Ingress = append(banp.Spec.Ingress, v1alpha1.BaselineAdminNetworkPolicyIngressRule{
			Name: r.name, Action: v1alpha1.BaselineAdminNetworkPolicyRuleAction(r.action), From: r.ingressPeers(), Ports: r.portsOrNil()})
	}
	for _, r := range egress {
		var to []v1alpha1.BaselineAdminNetworkPolicyEgressPeer
		for _, pe := range r.ingressPeers() {
			to = append(to, v1alpha1.BaselineAdminNetworkPolicyEgressPeer{Pods: pe.Pods})
		}
		for _, nets := range r.networkPeers() {
			to = append(to, v1alpha1.BaselineAdminNetworkPolicyEgressPeer{Networks: nets})
		}
		banp.Spec.Egress = append(banp.Spec.Egress, v1alpha1.BaselineAdminNetworkPolicyEgressRule{
			Name: r.name, Action: v1alpha1.BaselineAdminNetworkPolicyRuleAction(r.action), To: to, Ports: r.portsOrNil()})
	}
	return banp, nil
}

// namespacedPod selects w's pods: its namespace by name, its pods by the
// labels they share and keep.
func namespacedPod(w *workload) *v1alpha1.NamespacedPod {
	return &v1alpha1.NamespacedPod{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: w.namespace}},
		PodSelector:       metav1.LabelSelector{MatchLabels: w.selector},
	}
}

// adminPeer is a peer of an admin rule with its ports.
type adminPeer struct {
	w     *workload
	addr  netip.Prefix
	ports []v1alpha1.AdminNetworkPolicyPort
}

func (p adminPeer) order() string { return peerKey{p.w, p.addr}.order() }

// label names the peer in a rule's name.
func (p adminPeer) label() string {
	if p.w != nil {
		return p.w.namespace + "/" + p.w.name
	}
	return p.addr.String()
}

// adminAllow is one rule of either admin API, in the words both share:
// its pods and networks peers on ports.
type adminAllow struct {
	name   string
	action string // "Allow" or "Deny", the same in both APIs
	// everyPod: the peer is every pod (namespaces: {}), the ingress Deny's.
	everyPod bool
	pods     []*workload
	networks []v1alpha1.CIDR
	ports    []v1alpha1.AdminNetworkPolicyPort
	// first names the rule's first peer; peers counts them all.
	first string
	peers int
}

// adminRules are both directions' rules of an admin policy: the Allow
// rules of the observed peers, in egress the DNS, then a Deny of
// everything else (ingress: every pod, the only sources the API names;
// egress: every address, pods' included).
func adminRules(in, eg []adminPeer) (ingress, egress []adminAllow, err error) {
	if ingress, err = allowRules("from", in); err != nil {
		return nil, nil, fmt.Errorf("ingress: %w", err)
	}
	if egress, err = allowRules("to", eg); err != nil {
		return nil, nil, fmt.Errorf("egress: %w", err)
	}
	ingress = append(ingress, adminAllow{name: "deny-everything-else", action: "Deny", everyPod: true})
	egress = append(egress, dnsAllow(), adminAllow{name: "deny-everything-else", action: "Deny", networks: everyAddress})
	return ingress, egress, nil
}

// allowRules writes peers as Allow rules (dir "from" for ingress, "to"
// for egress), one per set of ports: peers
// observed on the same ports share a rule (up to the API's peers per
// rule; networks go into one peer, up to its networks per peer), which
// keeps a workload with many clients within the API's rules. The order
// is the peers' (workloads, then addresses); a rule's name says what it
// allows ("allow-from-app/client", "allow-to-shop/web-and-2-more").
func allowRules(dir string, peers []adminPeer) ([]adminAllow, error) {
	var rules []adminAllow
	open := map[string]int{} // ports -> the rule that takes their peers
	for _, p := range peers {
		key := portsKey(p.ports)
		i, ok := open[key]
		if ok && !rules[i].takes(p) {
			ok = false
		}
		if !ok {
			i = len(rules)
			open[key] = i
			rules = append(rules, adminAllow{action: "Allow", ports: p.ports, first: p.label()})
		}
		r := &rules[i]
		r.peers++
		if p.w != nil {
			r.pods = append(r.pods, p.w)
		} else {
			r.networks = append(r.networks, v1alpha1.CIDR(p.addr.String()))
		}
	}
	// The final Deny comes on top, and in egress the DNS rule.
	room, besides := maxAdminRules-1, "the final Deny"
	if dir == "to" {
		room, besides = maxAdminRules-2, "the DNS rule and the final Deny"
	}
	if len(rules) > room {
		return nil, fmt.Errorf("%d rules for the observed peers and ports, and the API takes %d in this direction besides %s: write NetworkPolicies (the default tier)",
			len(rules), room, besides)
	}
	for i := range rules {
		r := &rules[i]
		r.name = "allow-" + dir + "-" + r.first
		if r.peers > 1 {
			r.name += "-and-" + strconv.Itoa(r.peers-1) + "-more"
		}
		if len(r.name) > maxRuleName {
			r.name = r.name[:maxRuleName]
		}
	}
	return rules, nil
}

// takes reports whether the rule has room for one more peer: pods peers
// count one each, networks one per maxAdminNetworks.
func (r *adminAllow) takes(p adminPeer) bool {
	nets := len(r.networks)
	if p.w == nil {
		nets++
	}
	pods := len(r.pods)
	if p.w != nil {
		pods++
	}
	return pods+(nets+maxAdminNetworks-1)/maxAdminNetworks <= maxAdminPeers
}

// ingressPeers are the rule's pods peers (ingress takes no others).
func (r adminAllow) ingressPeers() []v1alpha1.AdminNetworkPolicyIngressPeer {
	if r.everyPod {
		return []v1alpha1.AdminNetworkPolicyIngressPeer{{Namespaces: &metav1.LabelSelector{}}}
	}
	var out []v1alpha1.AdminNetworkPolicyIngressPeer
	for _, w := range r.pods {
		out = append(out, v1alpha1.AdminNetworkPolicyIngressPeer{Pods: namespacedPod(w)})
	}
	return out
}

// networkPeers cuts the rule's networks into peers of at most
// maxAdminNetworks each.
func (r adminAllow) networkPeers() [][]v1alpha1.CIDR {
	var out [][]v1alpha1.CIDR
	for nets := r.networks; len(nets) > 0; {
		n := min(len(nets), maxAdminNetworks)
		out = append(out, nets[:n])
		nets = nets[n:]
	}
	return out
}

// portsOrNil is the rule's ports field: absent for every port.
func (r adminAllow) portsOrNil() *[]v1alpha1.AdminNetworkPolicyPort {
	if len(r.ports) == 0 {
		return nil
	}
	return &r.ports
}

// dnsAllow keeps the cluster DNS reachable, as dnsRule does for
// NetworkPolicies.
func dnsAllow() adminAllow {
	dns := &workload{namespace: "kube-system", selector: map[string]string{"k8s-app": "kube-dns"}}
	return adminAllow{name: "allow-dns", action: "Allow", pods: []*workload{dns}, ports: []v1alpha1.AdminNetworkPolicyPort{
		{PortNumber: &v1alpha1.Port{Protocol: corev1.ProtocolUDP, Port: 53}},
		{PortNumber: &v1alpha1.Port{Protocol: corev1.ProtocolTCP, Port: 53}},
	}}
}

// adminPorts writes observed ports as ports does for NetworkPolicies:
// by the name every destination pod gives the port, else by number.
func adminPorts(dsts []*state.Pod, observed []l4.Port) []v1alpha1.AdminNetworkPolicyPort {
	var out []v1alpha1.AdminNetworkPolicyPort
	for _, o := range observed {
		if name := portName(dsts, o); name != "" {
			out = append(out, v1alpha1.AdminNetworkPolicyPort{NamedPort: &name})
			continue
		}
		out = append(out, v1alpha1.AdminNetworkPolicyPort{PortNumber: &v1alpha1.Port{Protocol: corev1.Protocol(o.Proto.String()), Port: int32(o.Num)}})
	}
	return out
}

func portKey(p v1alpha1.AdminNetworkPolicyPort) string {
	if p.NamedPort != nil {
		return "name " + *p.NamedPort
	}
	return string(p.PortNumber.Protocol) + " " + strconv.Itoa(int(p.PortNumber.Port))
}

func portsKey(ps []v1alpha1.AdminNetworkPolicyPort) string {
	keys := make([]string, len(ps))
	for i, p := range ps {
		keys[i] = portKey(p)
	}
	return strings.Join(keys, ",")
}

func containsPort(ps []v1alpha1.AdminNetworkPolicyPort, p v1alpha1.AdminNetworkPolicyPort) bool {
	for _, q := range ps {
		if portKey(q) == portKey(p) {
			return true
		}
	}
	return false
}
