package lint

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/words"
)

// selectors reports subjects and peers that select nothing in the state.
func (l *linter) selectors() {
	c := l.e.Cluster()
	declaredNodes := slices.ContainsFunc(c.Nodes, func(n *state.Node) bool { return n.Declared })
	for _, p := range l.set.Policies() {
		members := l.e.Members(p)
		if len(members) == 0 {
			l.add(Finding{Severity: Warning, Code: CodeSelectsNothing, Object: p.Ref, Origin: p.Origin, Field: subjectField(p),
				Message: "selects no pod: " + l.describeEmpty(p.Subject, nil) + "; the policy has no effect",
				Hint:    "check the labels against the pods (kubectl get pods -A --show-labels)"})
			continue
		}
		// The subject's namespaces matter to relative selections and to
		// messages only: found when first needed.
		var subjectNS []*state.Namespace
		namespaces := func() []*state.Namespace {
			if subjectNS == nil {
				subjectNS = namespacesOf(members)
			}
			return subjectNS
		}
		for _, rules := range p.Rules {
			for _, r := range rules {
				for k, peer := range r.Peers {
					switch {
					case peer.Kind == policy.PeerPods && l.selectsNoPod(r, k, namespaces):
						l.add(Finding{Severity: Warning, Code: CodeSelectsNothing, Object: p.Ref, Origin: p.Origin, Field: peerField(r, peer.Index),
							Message: "peer selects no pod: " + l.describeEmpty(peer.Pods, namespaces()) + "; this peer matches nothing",
							Hint:    "check the labels against the pods and namespaces (kubectl get pods,namespaces -A --show-labels)"})
					case peer.Kind == policy.PeerNodes && declaredNodes && !slices.ContainsFunc(c.Nodes, func(n *state.Node) bool { return peer.Nodes.Matches(n.Labels) }):
						l.add(Finding{Severity: Warning, Code: CodeSelectsNothing, Object: p.Ref, Origin: p.Origin, Field: peerField(r, peer.Index) + ".nodes",
							Message: fmt.Sprintf("node selector %s selects no node", selectorText(peer.Nodes)),
							Hint:    "check the labels against the nodes (kubectl get nodes --show-labels)"})
					}
				}
			}
		}
	}
}

// selectsNoPod reports whether pod peer k of r selects no pod, seen from
// the subject's namespaces. The engine resolved every selection already;
// only one relative to the subject's namespace is looked at again.
func (l *linter) selectsNoPod(r *policy.Rule, k int, subjectNS func() []*state.Namespace) bool {
	ps := r.Peers[k].Pods
	if sel, ok := l.e.PeerSelection(r, k); ok && !ps.Namespaces.Relative() {
		return len(sel.Pods) == 0
	}
	return len(l.podPeerMembers(ps, subjectNS(), 1)) == 0
}

func subjectField(p *policy.Policy) string {
	if p.Tier == policy.TierNetworkPolicy {
		return "spec.podSelector"
	}
	return "spec.subject"
}

func selectorText(s policy.Selector) string {
	if s.Text == "" {
		return "{} (everything)"
	}
	return strconv.Quote(s.Text)
}

// namespacesOf lists the distinct namespaces of pods.
func namespacesOf(pods []*state.Pod) []*state.Namespace {
	var out []*state.Namespace
	seen := map[*state.Namespace]bool{}
	for _, p := range pods {
		if !seen[p.Namespace] {
			seen[p.Namespace] = true
			out = append(out, p.Namespace)
		}
	}
	return out
}

// selectedNamespaces lists the namespaces ns picks for any of the subject
// namespaces (relative selections depend on them).
func (l *linter) selectedNamespaces(ns policy.NamespaceSelector, subjectNS []*state.Namespace) []*state.Namespace {
	c := l.e.Cluster()
	switch ns.Match {
	case policy.NamespaceName:
		if n := c.Namespace(ns.Name); n != nil {
			return []*state.Namespace{n}
		}
		return nil
	case policy.NamespaceLabels:
		// Messages ask again and again about the same few selectors.
		if out, ok := l.nsSelected[ns.Selector.Text]; ok {
			return out
		}
		var out []*state.Namespace
		for _, n := range c.Namespaces {
			if ns.Matches(n.Name, n.Labels, "", nil) {
				out = append(out, n)
			}
		}
		l.nsSelected[ns.Selector.Text] = out
		return out
	}
	var out []*state.Namespace
	for _, n := range c.Namespaces {
		for _, s := range subjectNS {
			if ns.Matches(n.Name, n.Labels, s.Name, s.Labels) {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// podPeerMembers lists up to limit pods (0: all) that ps selects, seen from
// pods of the subject namespaces.
func (l *linter) podPeerMembers(ps policy.PodSelector, subjectNS []*state.Namespace, limit int) []*state.Pod {
	var out []*state.Pod
	for _, n := range l.selectedNamespaces(ps.Namespaces, subjectNS) {
		for _, p := range l.e.Cluster().PodsIn(n) {
			if !p.HostNetwork && ps.Pods.Matches(p.Labels) {
				out = append(out, p)
				if len(out) == limit {
					return out
				}
			}
		}
	}
	return out
}

// describeEmpty says which half of a pod selection comes up empty.
func (l *linter) describeEmpty(ps policy.PodSelector, subjectNS []*state.Namespace) string {
	nss := l.selectedNamespaces(ps.Namespaces, subjectNS)
	ns := ps.Namespaces
	switch {
	case ns.Match == policy.NamespaceName && l.e.Cluster().Namespace(ns.Name) != nil && !l.e.Cluster().Namespace(ns.Name).Declared:
		return fmt.Sprintf("namespace %s is not in the input, and no pod with labels %s is", ns.Name, selectorText(ps.Pods))
	case len(nss) == 0:
		return "its namespace selection (" + describeNamespaces(ns) + ") matches no namespace"
	}
	names := make([]string, 0, 3)
	for i, n := range nss {
		if i == 3 {
			names = append(names, "...")
			break
		}
		names = append(names, n.Name)
	}
	return fmt.Sprintf("no pod with labels %s in %s (%s)", selectorText(ps.Pods), words.CountAs(len(nss), "namespace", "namespaces"), strings.Join(names, ", "))
}

func describeNamespaces(ns policy.NamespaceSelector) string {
	switch ns.Match {
	case policy.NamespaceLabels:
		return "namespace labels " + selectorText(ns.Selector)
	case policy.NamespaceName:
		return "namespace " + ns.Name
	case policy.NamespaceSelf:
		return "related: Self"
	case policy.NamespaceNotSelf:
		return "related: NotSelf"
	case policy.NamespaceSameLabels:
		return "sameLabels " + strings.Join(ns.Keys, ",")
	}
	return "notSameLabels " + strings.Join(ns.Keys, ",")
}

// namedPorts reports named ports that no destination pod of the rule
// declares: the port then matches nothing. Ingress rules resolve them on
// the policy's own pods, egress rules on the peers.
func (l *linter) namedPorts() {
	for _, p := range l.set.Policies() {
		members := l.e.Members(p)
		if len(members) == 0 {
			continue
		}
		for _, rules := range p.Rules {
			for _, r := range rules {
				var dsts []*state.Pod
				for j, pm := range r.Ports {
					if pm.Named == "" {
						continue
					}
					if dsts == nil {
						dsts = l.destinations(r, members)
					}
					if len(dsts) == 0 || slices.ContainsFunc(dsts, func(d *state.Pod) bool { _, ok := d.NamedPort(pm.Named, pm.NamedProto); return ok }) {
						continue
					}
					who := "the pods this policy selects"
					if r.Dir == policy.Egress {
						who = "the pods this rule sends to"
					}
					l.add(Finding{Severity: Warning, Code: CodeNamedPort, Object: p.Ref, Origin: p.Origin, Field: portField(r, j),
						Message: fmt.Sprintf("none of %s (%s) declares a container port named %s; this port matches nothing", who, podList(dsts), pm),
						Hint:    "they declare: " + declaredNames(dsts) + "; use one of those names or a port number"})
				}
			}
		}
	}
}

// destinations are the pods a rule's named ports are resolved on.
func (l *linter) destinations(r *policy.Rule, members []*state.Pod) []*state.Pod {
	if r.Dir == policy.Ingress {
		return members
	}
	if r.AllPeers {
		return l.e.Cluster().Pods
	}
	seen := map[*state.Pod]bool{}
	var out []*state.Pod
	var subjectNS []*state.Namespace
	for k, peer := range r.Peers {
		var pods []*state.Pod
		switch peer.Kind {
		case policy.PeerPods:
			if sel, ok := l.e.PeerSelection(r, k); ok && !peer.Pods.Namespaces.Relative() {
				pods = l.podsOf(sel.Pods)
				break
			}
			if subjectNS == nil {
				subjectNS = namespacesOf(members)
			}
			pods = l.podPeerMembers(peer.Pods, subjectNS, 0)
		case policy.PeerIPBlock:
			pods = l.podsInBlock(peer.Block)
		}
		for _, p := range pods {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

func (l *linter) podsOf(ids []int32) []*state.Pod {
	out := make([]*state.Pod, len(ids))
	for i, id := range ids {
		out[i] = l.e.Cluster().Pods[id]
	}
	return out
}

// podsInBlock are the pods whose first address the block holds; rules
// share a few blocks.
func (l *linter) podsInBlock(b policy.IPBlock) []*state.Pod {
	k := b.String()
	if pods, ok := l.blockPods[k]; ok {
		return pods
	}
	var pods []*state.Pod
	for _, p := range l.e.Cluster().Pods {
		if len(p.IPs) > 0 && !p.HostNetwork && b.Contains(p.IPs[0]) {
			pods = append(pods, p)
		}
	}
	l.blockPods[k] = pods
	return pods
}

// portField is the path of a rule's port clause j, in its API's words.
func portField(r *policy.Rule, j int) string {
	switch r.Policy.Kind {
	case policy.KindNetworkPolicy:
		return fmt.Sprintf("%s.ports[%d].port", ruleField(r), j)
	case policy.KindClusterNetworkPolicy:
		return fmt.Sprintf("%s.protocols[%d].destinationNamedPort", ruleField(r), j)
	}
	return fmt.Sprintf("%s.ports[%d].namedPort", ruleField(r), j)
}

// podList names a few pods and counts the rest.
func podList(pods []*state.Pod) string {
	var names []string
	for i, p := range pods {
		if i == 2 {
			return strings.Join(names, ", ") + fmt.Sprintf(" and %d more", len(pods)-2)
		}
		names = append(names, p.Key())
	}
	return strings.Join(names, ", ")
}

func declaredNames(pods []*state.Pod) string {
	seen := map[string]bool{}
	for _, p := range pods {
		for _, cp := range p.Ports {
			if cp.Name != "" {
				seen[cp.String()] = true
			}
		}
	}
	if len(seen) == 0 {
		return "no named ports"
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 6 {
		names = append(names[:6], "...")
	}
	return strings.Join(names, ", ")
}
