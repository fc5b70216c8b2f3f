package diff

import (
	"slices"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// A flow src -> dst is decided by the source's egress and the
// destination's ingress. Each side looks at the policies that select its
// pod, at that pod and at the pod at the other end, nothing else. So when
// the source is the same pod in OLD and NEW (labels, namespace, addresses,
// ports, node) and so are the policies that select it for egress, and the
// same holds of the destination for ingress, the flow is decided alike on
// both sides: a pull request that changes a few policies changes the
// verdicts of the pods they select and of no others, and diff decides only
// the pairs that such a pod is in.

// quiet says, for each common pod (index-aligned oldPods, newPods), whether
// its verdicts as a source (src) and as a destination (dst) cannot change:
// the pod is the same on both sides, and so are the policies that select
// it for that direction.
func quiet(old, new *engine.Engine, oldPods, newPods []*state.Pod) (src, dst []bool) {
	src, dst = make([]bool, len(oldPods)), make([]bool, len(oldPods))
	if old.Options() != new.Options() {
		return src, dst // every verdict may change
	}
	keys := newPolicyKeys()
	for i, p := range oldPods {
		q := newPods[i]
		if podKey(old, p) != podKey(new, q) {
			continue
		}
		before, after := old.Applicable(p), new.Applicable(q)
		src[i] = keys.same(before, after, policy.Egress)
		dst[i] = keys.same(before, after, policy.Ingress)
	}
	return src, dst
}

// podKey writes everything about a pod that a verdict can look at, on
// either end of a flow: its labels and namespace (namespace selectors,
// relative selections, the legacy isolation annotation), its addresses
// (ipBlocks, the address family), its ports (named ports), its node (the
// node's own traffic; a host-network pod is its node for node peers).
func podKey(e *engine.Engine, p *state.Pod) string {
	var b strings.Builder
	b.WriteString(p.Namespace.Name)
	writeLabels(&b, p.Namespace.Labels)
	b.WriteString(strconv.FormatBool(p.Namespace.LegacyIngressIsolation))
	writeLabels(&b, p.Labels)
	for _, ip := range p.IPs {
		b.WriteString(ip.String())
		b.WriteByte(',')
	}
	b.WriteByte('|')
	for _, cp := range p.Ports {
		b.WriteString(cp.String())
		b.WriteByte(',')
	}
	b.WriteString("|" + p.Node + "|" + strconv.FormatBool(p.HostNetwork))
	if n := e.Cluster().Node(p.Node); n != nil && p.HostNetwork {
		writeLabels(&b, n.Labels)
		for _, ip := range n.IPs {
			b.WriteString(ip.String())
			b.WriteByte(',')
		}
	}
	return b.String()
}

func writeLabels(b *strings.Builder, l map[string]string) {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteByte('{')
	for _, k := range keys {
		b.WriteString(strconv.Quote(k) + "=" + strconv.Quote(l[k]) + ",")
	}
	b.WriteByte('}')
}

// policyKeys numbers policies by their content, so that a policy of OLD
// and its copy in NEW (another pointer, maybe another file) compare equal.
type policyKeys struct {
	byPolicy  map[*policy.Policy]int
	byContent map[string]int
}

func newPolicyKeys() policyKeys {
	return policyKeys{byPolicy: map[*policy.Policy]int{}, byContent: map[string]int{}}
}

// same reports whether before and after are the same policies, in the same
// order, as far as direction d goes: a policy without a say in d (an
// ingress-only NetworkPolicy for egress) is left out.
func (k policyKeys) same(before, after []*policy.Policy, d policy.Direction) bool {
	i, j := 0, 0
	for {
		for i < len(before) && !says(before[i], d) {
			i++
		}
		for j < len(after) && !says(after[j], d) {
			j++
		}
		if i == len(before) || j == len(after) {
			return i == len(before) && j == len(after)
		}
		if k.of(before[i]) != k.of(after[j]) {
			return false
		}
		i++
		j++
	}
}

// says reports whether p has a say in direction d: NetworkPolicies only
// where they isolate, admin-tier policies where they have rules.
func says(p *policy.Policy, d policy.Direction) bool {
	if p.Tier == policy.TierNetworkPolicy {
		return p.Isolates[d]
	}
	return len(p.Rules[d]) > 0
}

// of returns the number of p's content.
func (k policyKeys) of(p *policy.Policy) int {
	if n, ok := k.byPolicy[p]; ok {
		return n
	}
	key := policyContent(p)
	n, ok := k.byContent[key]
	if !ok {
		n = len(k.byContent)
		k.byContent[key] = n
	}
	k.byPolicy[p] = n
	return n
}

// policyContent writes every field of a policy that a verdict or a trace
// can depend on; not where it was read from (Origin) nor the annotations
// that do not change what it decides (Audit; Staged policies are not in an
// engine's enforced set). TestPolicyContentCoversTheModel fails when the
// model gains a field this does not write.
func policyContent(p *policy.Policy) string {
	var b strings.Builder
	b.WriteString(p.Ref.String())
	b.WriteString("|" + strconv.Itoa(int(p.Tier)) + "|" + strconv.Itoa(int(p.Priority)) + "|")
	writePodSelector(&b, p.Subject)
	b.WriteString("|" + strconv.FormatBool(p.Isolates[0]) + strconv.FormatBool(p.Isolates[1]))
	for d, rules := range p.Rules {
		for _, r := range rules {
			b.WriteString("\n" + strconv.Itoa(d) + "/" + strconv.Itoa(int(r.Dir)) + "/" + strconv.Itoa(r.Index) + "/" + strconv.Quote(r.Name) +
				"/" + strconv.Itoa(int(r.Action)) + "/" + strconv.FormatBool(r.AllPeers) + strconv.FormatBool(r.AllPorts) + strconv.FormatBool(r.FailClosed))
			for _, peer := range r.Peers {
				b.WriteString(" peer " + strconv.Itoa(int(peer.Kind)) + "/" + strconv.Itoa(peer.Index) + "/")
				writePodSelector(&b, peer.Pods)
				b.WriteString("/" + peer.Block.String() + "/" + strconv.Quote(peer.Nodes.Text) + "/" + policy.JoinDomains(peer.Domains, ","))
			}
			for _, pm := range r.Ports {
				b.WriteString(" port " + pm.Range.String() + "/" + strconv.Itoa(int(pm.Range.First)) + "-" + strconv.Itoa(int(pm.Range.Last)) +
					"/" + strconv.Quote(pm.Named) + "/" + strconv.Itoa(int(pm.NamedProto)))
			}
		}
	}
	return b.String()
}

func writePodSelector(b *strings.Builder, ps policy.PodSelector) {
	ns := ps.Namespaces
	b.WriteString(strconv.Itoa(int(ns.Match)) + ":" + strconv.Quote(ns.Selector.Text) + ":" + strconv.Quote(ns.Name) + ":" +
		strings.Join(ns.Keys, ",") + ":" + strconv.Quote(ps.Pods.Text))
}
