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

// quiet says, for each joint class, whether its verdicts as a source
// (src) and as a destination (dst) cannot change: some pod of it is the
// same in OLD and NEW, and so are the policies that select that pod for
// egress (src) or ingress (dst). self: two different pods of the class
// are, one as a source and the other as a destination, so that the class
// towards itself cannot change either.
func (d *differ) quiet() (src, dst, self []bool) {
	n := len(d.members)
	src, dst, self = make([]bool, n), make([]bool, n), make([]bool, n)
	d.same = make([]bool, n)
	if d.old.Options() != d.new.Options() {
		return src, dst, self // every verdict may change
	}
	for c, m := range d.members {
		var sources, dests, both int // quiet pods: as a source, as a destination, as both
		for _, i := range m {
			p, q := d.oldPods[i], d.newPods[i]
			if podKey(d.old, p) != podKey(d.new, q) {
				continue
			}
			d.same[c] = true
			before, after := d.old.Applicable(p), d.new.Applicable(q)
			s, t := d.samePolicies(before, after, policy.Egress), d.samePolicies(before, after, policy.Ingress)
			if s {
				sources++
			}
			if t {
				dests++
			}
			if s && t {
				both++
			}
			if sources > 0 && dests > 0 && sources+dests-both >= 2 {
				break // all known: a source and another destination
			}
		}
		src[c], dst[c] = sources > 0, dests > 0
		// Two different pods unless the only quiet source is the only
		// quiet destination.
		self[c] = sources > 0 && dests > 0 && !(sources == 1 && dests == 1 && both == 1)
	}
	return src, dst, self
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

// samePolicies reports whether before and after are the same policies, in
// the same order, as far as direction dir goes: a policy without a say in
// dir (an ingress-only NetworkPolicy for egress) is left out.
func (d *differ) samePolicies(before, after []*policy.Policy, dir policy.Direction) bool {
	i, j := 0, 0
	for {
		for i < len(before) && !d.says(before[i], dir) {
			i++
		}
		for j < len(after) && !d.says(after[j], dir) {
			j++
		}
		if i == len(before) || j == len(after) {
			return i == len(before) && j == len(after)
		}
		if d.keys.of(before[i]) != d.keys.of(after[j]) {
			return false
		}
		i++
		j++
	}
}

// says reports whether p has a say in direction dir: its rules count there
// as the engine walks them (engine.Counts: a NetworkPolicy's only where it
// isolates, or every one's ingress with the legacy isolation) and it has
// some, or it isolates.
func (d *differ) says(p *policy.Policy, dir policy.Direction) bool {
	return d.old.Counts(p, dir) && (len(p.Rules[dir]) > 0 || p.Isolates[dir])
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
	b.WriteString("|" + strconv.FormatBool(p.Isolates[0]) + strconv.FormatBool(p.Isolates[1]) + strconv.FormatBool(p.Invalid))
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
