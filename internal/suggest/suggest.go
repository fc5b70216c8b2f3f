// Package suggest writes the policies that allow observed flows and as
// little else as it can: one NetworkPolicy per workload, isolating it both
// ways, its ingress allowing the observed sources and its egress the
// observed destinations and the cluster DNS, on the observed ports (or
// the same as AdminNetworkPolicies, or as the one
// BaselineAdminNetworkPolicy: Options.Tier). It writes them the way a
// careful person would: selectors on the application's labels
// (app.kubernetes.io/*, app) when they select the workload alone, else on
// every label its pods share and keep (never a controller's hash or a
// version), kubernetes.io/metadata.name for namespaces, named ports where
// the destination declares them, single addresses for peers outside the
// cluster (or the prefixes that cover them, as wide as the options
// allow). Verify proves a suggestion with the engine. It is a front end's
// part: it imports engine, state, policy (for its annotations), observed
// (the record's lines), l4 and the API types, and only cli imports it.
package suggest

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Flow is one observed connection: From and To are pods ("ns/name"),
// workloads ("ns/Kind/name": the pods of a controller, as the agent
// records them) or addresses; Port is the destination port, Count how
// often it was seen.
type Flow struct {
	From, To string
	Port     l4.Port
	Count    int
	// Recorded: read from an agent's record, which names an end by its
	// address only when no pod had the address then (see Screen).
	Recorded bool
}

func (f Flow) String() string {
	s := f.From + " -> " + f.To + " " + f.Port.String()
	if f.Count > 1 {
		s += " (" + strconv.Itoa(f.Count) + " times)"
	}
	return s
}

// Options of Suggest.
type Options struct {
	// Enforce leaves the staged annotation off: the policies are enforced
	// once applied.
	Enforce bool
	// CIDRMax4 and CIDRMax6 are the prefix lengths that outside addresses
	// are widened to, each to the prefix that covers it (0: /32 and /128,
	// every address alone): a service behind changing addresses of one
	// network needs one rule, not one per address seen.
	CIDRMax4, CIDRMax6 int
	// Tier is the API the policies are written in.
	Tier Tier
	// Priority is the first AdminNetworkPolicy's priority (TierAdmin);
	// the next workload's policy takes the next one.
	Priority int32
	// Warn, when set, is told what a reader of the policies should know:
	// a workload's selector that also selects pods of others, which its
	// policy then isolates too.
	Warn func(string)
}

// Tier is the policy API a suggestion is written in.
type Tier int

const (
	// TierNetworkPolicy writes one NetworkPolicy per workload.
	TierNetworkPolicy Tier = iota
	// TierAdmin writes one AdminNetworkPolicy per workload, each of its
	// own priority.
	TierAdmin
	// TierBaseline writes the BaselineAdminNetworkPolicy "default".
	TierBaseline
)

// ParseTier reads --tier: "" or networkpolicy, admin, baseline.
func ParseTier(s string) (Tier, error) {
	switch strings.ToLower(s) {
	case "", "networkpolicy":
		return TierNetworkPolicy, nil
	case "admin":
		return TierAdmin, nil
	case "baseline":
		return TierBaseline, nil
	}
	return 0, fmt.Errorf("tier %q: want networkpolicy, admin or baseline", s)
}

// unstableLabels are set by controllers per revision or per pod: a
// selector on them stops matching at the next rollout.
var unstableLabels = []string{"version", "app.kubernetes.io/version", "pod-template-hash", "controller-revision-hash", "pod-template-generation",
	"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "batch.kubernetes.io/controller-uid",
	"controller-uid", "batch.kubernetes.io/job-name", "job-name"}

// workload is the pods a policy is for: one controller's in a namespace,
// or one pod.
type workload struct {
	namespace, name string
	kind            string // the controller's kind; "" for a bare pod
	pods            []*state.Pod
	selector        map[string]string
}

// display names w as flows do: namespace/Kind/name, or pod namespace/name.
func (w *workload) display() string {
	if w.kind == "" {
		return "pod " + w.namespace + "/" + w.name
	}
	return w.namespace + "/" + w.kind + "/" + w.name
}

// namer names policies: <name>-suggested when no other workload of the
// namespace has that name, else <name>-<kind>-suggested (kind lowercased,
// "pod" for a bare pod), so that a bare pod web and a Deployment web do
// not write the same policy. Uniqueness is over the input's workloads, not
// the suggested ones: a name must not change when a flow of the other
// workload shows up later.
type namer struct {
	c *state.Cluster
	// kinds[namespace][name] are the kinds of the workloads of that name
	// ("" for a bare pod).
	kinds map[string]map[string][]string
}

func (n *namer) name(w *workload) string {
	byName := n.kinds[w.namespace]
	if byName == nil {
		byName = map[string][]string{}
		for _, p := range n.c.PodsIn(n.c.Namespace(w.namespace)) {
			kind, name := p.Controller()
			if !slices.Contains(byName[name], kind) {
				byName[name] = append(byName[name], kind)
			}
		}
		n.kinds[w.namespace] = byName
	}
	if len(byName[w.name]) <= 1 {
		return w.name + "-suggested"
	}
	kind := strings.ToLower(w.kind)
	if kind == "" {
		kind = "pod"
	}
	return w.name + "-" + kind + "-suggested"
}

// Policy is one suggested policy object: a *networkingv1.NetworkPolicy,
// a *v1alpha1.AdminNetworkPolicy or the *v1alpha1.BaselineAdminNetworkPolicy,
// as Options.Tier asks.
type Policy interface {
	metav1.Object
	runtime.Object
}

// Suggest returns the policies for the workloads that flows name, in the
// tier opts asks for: NetworkPolicies sorted by namespace and name,
// AdminNetworkPolicies in priority order, or the one
// BaselineAdminNetworkPolicy. Flows equal in from, to and port are merged
// first. A flow naming a pod or a workload the cluster does not have is
// an error, and so is a suggestion the tier's API cannot hold.
func Suggest(c *state.Cluster, flows []Flow, opts Options) ([]Policy, error) {
	flows = Merge(flows) // each flow once in the annotations
	plans, err := plan(c, flows, opts)
	if err != nil {
		return nil, err
	}
	var out []Policy
	switch opts.Tier {
	case TierAdmin:
		return adminPolicies(plans, opts)
	case TierBaseline:
		for _, o := range c.Policies {
			if o.Kind == "BaselineAdminNetworkPolicy" {
				return nil, fmt.Errorf("the input has the BaselineAdminNetworkPolicy %s already (%s), and the API takes only one: add the suggested rules to it by hand, or choose another tier", o.Name, o.Origin)
			}
		}
		banp, err := baselinePolicy(plans, flows, opts)
		if err != nil || banp == nil {
			return nil, err
		}
		return []Policy{banp}, nil
	}
	for _, p := range plans {
		out = append(out, networkPolicy(p, opts))
	}
	return out, nil
}

// workloadPlan is what a workload's policy allows, whatever the tier:
// its peers on each side with their observed ports, and the flows that
// justify them.
type workloadPlan struct {
	w               *workload
	name            string // the policy's name (namer)
	ingress, egress []sidePeer
	flows           []Flow
}

// sidePeer is one peer of a side with its observed ports.
type sidePeer struct {
	peerKey
	ports []l4.Port
}

// plan works out every workload's plan, sorted by namespace and policy
// name, from merged flows.
func plan(c *state.Cluster, flows []Flow, opts Options) ([]*workloadPlan, error) {
	byPod := map[string]*workload{}
	named := NewEnds(c)
	workloadOf := func(end string) (*workload, error) {
		pods, err := named.Pods(end)
		if err != nil {
			return nil, err
		}
		return workloadFor(c, pods[0], byPod), nil
	}
	type sides struct {
		ingress, egress map[peerKey][]l4.Port
		flows           []Flow
	}
	policies := map[*workload]*sides{}
	get := func(w *workload) *sides {
		if policies[w] == nil {
			policies[w] = &sides{ingress: map[peerKey][]l4.Port{}, egress: map[peerKey][]l4.Port{}}
		}
		return policies[w]
	}
	for _, f := range flows {
		var src, dst peerKey
		var err error
		for _, end := range []struct {
			s string
			k *peerKey
		}{{f.From, &src}, {f.To, &dst}} {
			if a, perr := netip.ParseAddr(end.s); perr == nil {
				if p := c.PodByIP(a.Unmap()); p != nil && !p.HostNetwork {
					end.k.w = workloadFor(c, p, byPod)
				} else {
					end.k.addr = widen(a.Unmap(), opts)
				}
				continue
			}
			if end.k.w, err = workloadOf(end.s); err != nil {
				return nil, err
			}
		}
		if src.w != nil {
			s := get(src.w)
			s.egress[dst] = appendPort(s.egress[dst], f.Port)
			s.flows = append(s.flows, f)
		}
		if dst.w != nil {
			s := get(dst.w)
			s.ingress[src] = appendPort(s.ingress[src], f.Port)
			if src.w != dst.w {
				s.flows = append(s.flows, f)
			}
		}
	}
	for w := range policies {
		if len(w.selector) == 0 {
			return nil, fmt.Errorf("%s: its pods share no label a selector could use (controller hashes left aside), and an empty selector would select every pod of namespace %s: label its pods (app: %s, say), or leave its flows out",
				w.display(), w.namespace, w.name)
		}
	}
	names := &namer{c: c, kinds: map[string]map[string][]string{}}
	var out []*workloadPlan
	for w, s := range policies {
		p := &workloadPlan{w: w, name: names.name(w), flows: s.flows}
		for _, k := range sortedPeers(s.ingress) {
			p.ingress = append(p.ingress, sidePeer{k, s.ingress[k]})
		}
		for _, k := range sortedPeers(s.egress) {
			p.egress = append(p.egress, sidePeer{k, s.egress[k]})
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].w.namespace != out[j].w.namespace {
			return out[i].w.namespace < out[j].w.namespace
		}
		return out[i].name < out[j].name
	})
	if opts.Warn != nil {
		for _, p := range out {
			if w := reach(c, p.w, byPod); w != "" {
				opts.Warn(w)
			}
		}
	}
	return out, nil
}

// networkPolicy is a workload's NetworkPolicy: it isolates the workload
// both ways and allows what was observed, and the cluster DNS.
func networkPolicy(p *workloadPlan, opts Options) *networkingv1.NetworkPolicy {
	w := p.w
	np := &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: w.namespace, Annotations: annotations(p.flows, opts)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: w.selector},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	for _, k := range p.ingress {
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{
			From: []networkingv1.NetworkPolicyPeer{peer(w, k.w, k.addr)}, Ports: ports(w.pods, k.ports)})
	}
	for _, k := range p.egress {
		np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{peer(w, k.w, k.addr)}, Ports: ports(k.pods(), k.ports)})
	}
	np.Spec.Egress = append(np.Spec.Egress, dnsRule())
	return np
}

// annotations are a suggested policy's: the flows behind it, and staged
// unless enforced (internal/policy honours netpol.io/staged on every
// policy kind).
func annotations(flows []Flow, opts Options) map[string]string {
	a := map[string]string{"netpol.io/suggested-from": justification(flows)}
	if !opts.Enforce {
		a[policy.StagedAnnotation] = "true"
	}
	return a
}

// pods are the peer's pods: a workload's, none for addresses.
func (k peerKey) pods() []*state.Pod {
	if k.w == nil {
		return nil
	}
	return k.w.pods
}

// peerKey is one peer of a workload's side: a workload, or addresses
// outside the cluster.
type peerKey struct {
	w    *workload
	addr netip.Prefix
}

// widen is the prefix an outside address is written as (Options.CIDRMax4,
// CIDRMax6).
func widen(a netip.Addr, opts Options) netip.Prefix {
	bits := opts.CIDRMax4
	if a.Is6() {
		bits = opts.CIDRMax6
	}
	if bits <= 0 || bits > a.BitLen() {
		bits = a.BitLen()
	}
	return netip.PrefixFrom(a, bits).Masked()
}

// order sorts peers: workloads by namespace, name and kind (two
// workloads may share a name), then addresses.
func (k peerKey) order() string {
	if k.w != nil {
		return "0 " + k.w.namespace + "/" + k.w.name + "/" + k.w.kind
	}
	return "1 " + k.addr.String()
}

// sortedPeers orders a side's peers (peerKey.order).
func sortedPeers(m map[peerKey][]l4.Port) []peerKey {
	keys := make([]peerKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].order() < keys[j].order() })
	return keys
}

func appendPort(ps []l4.Port, p l4.Port) []l4.Port {
	if slices.Contains(ps, p) {
		return ps
	}
	ps = append(ps, p)
	slices.SortFunc(ps, func(a, b l4.Port) int {
		if a.Proto != b.Proto {
			return int(a.Proto) - int(b.Proto)
		}
		return int(a.Num) - int(b.Num)
	})
	return ps
}

// workloadFor returns p's workload: the pods of the same namespace and
// controller (or p alone), selected by the stable labels they share.
func workloadFor(c *state.Cluster, p *state.Pod, byPod map[string]*workload) *workload {
	if w := byPod[p.Key()]; w != nil {
		return w
	}
	w := &workload{namespace: p.Namespace.Name, name: p.Name}
	if p.Owner != "" {
		w.kind, w.name = p.Controller()
		for _, q := range c.PodsIn(p.Namespace) {
			if q.Owner == p.Owner {
				w.pods = append(w.pods, q)
			}
		}
	} else {
		w.pods = []*state.Pod{p}
	}
	shared := map[string]string{}
	for k, v := range p.Labels {
		if slices.Contains(unstableLabels, k) {
			continue
		}
		all := true
		for _, q := range w.pods {
			all = all && q.Labels[k] == v
		}
		if all {
			shared[k] = v
		}
	}
	// The application's own labels, when they tell its pods from the
	// namespace's others, are what a person would select by; the other
	// labels may be a team's or a cost centre's, and change for reasons
	// of their own.
	w.selector = shared
	if app := appLabels(shared); len(app) > 0 && len(alsoSelected(c, w, app)) == 0 {
		w.selector = app
	}
	for _, q := range w.pods {
		byPod[q.Key()] = w
	}
	return w
}

// reach says, for a workload that gets a policy, which other workloads
// its selector also selects in its namespace (no label tells them apart):
// the policy isolates them too, and their traffic that it does not allow
// is denied. "" when none.
func reach(c *state.Cluster, w *workload, byPod map[string]*workload) string {
	var others []string
	for _, q := range alsoSelected(c, w, w.selector) {
		if o := workloadFor(c, q, byPod).display(); !slices.Contains(others, o) {
			others = append(others, o)
		}
	}
	if len(others) == 0 {
		return ""
	}
	sort.Strings(others)
	return fmt.Sprintf("%s: its selector %s also selects %s, which its policy isolates too: label them apart",
		w.display(), labels.Set(w.selector), strings.Join(others, ", "))
}

// appLabels are the labels of set that name the application: the
// recommended app.kubernetes.io/ name, instance, component and part-of,
// and the conventional app and k8s-app.
func appLabels(set map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range set {
		switch k {
		case "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component", "app.kubernetes.io/part-of", "app", "k8s-app":
			out[k] = v
		}
	}
	return out
}

// alsoSelected returns the pods of w's namespace that sel selects and that
// are not w's (host-network pods, which no policy selects, left out).
func alsoSelected(c *state.Cluster, w *workload, sel map[string]string) []*state.Pod {
	s := labels.SelectorFromSet(sel)
	var out []*state.Pod
	for _, q := range c.PodsIn(w.pods[0].Namespace) {
		if !q.HostNetwork && s.Matches(q.Labels) && !slices.Contains(w.pods, q) {
			out = append(out, q)
		}
	}
	return out
}

// peer selects other (a workload, or addresses outside the cluster) as
// seen from w's namespace.
func peer(w, other *workload, addrs netip.Prefix) networkingv1.NetworkPolicyPeer {
	if other == nil {
		return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: addrs.String()}}
	}
	p := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: other.selector}}
	if other.namespace != w.namespace {
		p.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: other.namespace}}
	}
	return p
}

// ports writes observed ports, by the name every destination pod gives
// the port when they all declare it, else by number.
func ports(dsts []*state.Pod, observed []l4.Port) []networkingv1.NetworkPolicyPort {
	var out []networkingv1.NetworkPolicyPort
	for _, o := range observed {
		proto := corev1.Protocol(o.Proto.String())
		port := intstr.FromInt32(int32(o.Num))
		if name := portName(dsts, o); name != "" {
			port = intstr.FromString(name)
		}
		out = append(out, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
	}
	return out
}

func portName(dsts []*state.Pod, o l4.Port) string {
	name := ""
	for _, p := range dsts {
		found := ""
		for _, cp := range p.Ports {
			if cp.Port == o && cp.Name != "" {
				found = cp.Name
			}
		}
		if found == "" || name != "" && found != name {
			return ""
		}
		name = found
	}
	return name
}

// dnsRule keeps the cluster DNS reachable: the pods CoreDNS runs as, in
// kube-system, on 53 over UDP and TCP.
func dnsRule() networkingv1.NetworkPolicyEgressRule {
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	p53 := intstr.FromInt32(53)
	return networkingv1.NetworkPolicyEgressRule{
		To: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
		}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &p53}, {Protocol: &tcp, Port: &p53}},
	}
}

// maxJustified bounds the flows an annotation lists.
const maxJustified = 20

// justification lists the flows that made a policy.
func justification(flows []Flow) string {
	lines := make([]string, 0, min(len(flows), maxJustified)+1)
	for i, f := range flows {
		if i == maxJustified {
			lines = append(lines, fmt.Sprintf("and %d more", len(flows)-maxJustified))
			break
		}
		lines = append(lines, f.String())
	}
	return strings.Join(lines, "\n")
}
