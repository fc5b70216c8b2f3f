// Package exposure answers who could reach a workload, and what it could
// reach, beyond the pods that exist today. A matrix decides the pods of
// the input; a reviewer asks what a new pod could do. So exposure is told
// in selectors and address blocks, not pods: per workload and direction,
// the entries that decide its traffic, in the order the tiers decide
// (the first entry that matches a connection decides it), each with the
// rule it comes from, and how many pods each selector matches today,
// since it matches every pod labelled alike later.
//
// It is exact because it is the tier walk itself (engine.Program) read
// as text: nothing is summarised away, so an entry shadowed by an earlier
// one is still listed, after it. Its cost follows the distinct tiers, not
// the workloads: a tier that selects many workloads alike (an admin
// policy over every namespace labelled env=prod) is one Block, laid out
// once and named by every side it decides (engine.TierKey). A cluster of
// 100k pods has tens of thousands of workloads but few distinct admin
// tiers. It is a front end of the engine and is imported only by cli and
// lint.
package exposure

import (
	"cmp"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Report is the exposure of a cluster's workloads.
type Report struct {
	// Blocks are the tiers the sides name, each laid out once.
	Blocks []*Block `json:"blocks"`
	// Workloads by namespace, name and kind.
	Workloads []Workload `json:"workloads"`
}

// Block is one tier of one or more sides: the entries of the policies
// of that tier that select the pods, in the order they decide.
type Block struct {
	ID      int     `json:"id"`
	Tier    string  `json:"tier"` // admin, networkpolicy, baseline
	Entries []Entry `json:"entries"`
	// opens are, per entry, what it opens fully with nothing before it in
	// the block that could take part back ("" for most).
	opens []string
	// takesBack: an entry denies or passes something, so no later block
	// opens anything fully.
	takesBack  bool
	relative   bool     // a peer's namespaces are relative to the subject's
	isolatedBy []string // when the tier denies the rest
}

// Workload is the exposure of one workload: a controller's pods in a
// namespace, or a bare pod. Pods of one workload that policies select
// differently (a rollout half done, a label on one pod) are a Workload
// each.
type Workload struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind,omitempty"` // the controller's kind; "" for a bare pod
	Name      string `json:"name"`
	// Pods are the pods these answers are for, namespace/name.
	Pods    []string `json:"pods"`
	Ingress Side     `json:"ingress"`
	Egress  Side     `json:"egress"`
}

// Display names the workload as flows and records do: namespace/Kind/name,
// or namespace/name for a bare pod.
func (w *Workload) Display() string {
	if w.Kind == "" {
		return w.Namespace + "/" + w.Name
	}
	return w.Namespace + "/" + w.Kind + "/" + w.Name
}

// Side is one direction of a workload: who may connect to it (ingress),
// or what it may connect to (egress).
type Side struct {
	// Blocks decide in order (IDs of Report.Blocks): the first entry
	// that matches a connection decides it; a pass leaves it to the
	// NetworkPolicy tier (from the admin tier) or to the default (from a
	// ClusterNetworkPolicy's baseline tier).
	Blocks []int `json:"blocks"`
	// Rest is what no entry decides: "allow" (the default), or "deny"
	// when NetworkPolicies isolate the pods (IsolatedBy says which).
	Rest       string   `json:"rest"`
	IsolatedBy []string `json:"isolatedBy,omitempty"`
	// Open names what the side is open to by an allowing entry that
	// nothing before it can take back: "every namespace" (every pod of
	// every namespace), "0.0.0.0/0", "::/0", or "anything" (a rule
	// without peers, or the default).
	Open []string `json:"open,omitempty"`
	// Openings are the entries behind Open (the default's aside), each
	// with what it opens.
	Openings []Opening `json:"-"`
}

// Opening is an entry that opens a side fully to What.
type Opening struct {
	What  string
	Entry *Entry
}

// Entry is one peer of one rule, as it decides for the workload.
type Entry struct {
	Verdict string `json:"verdict"` // allow, deny, pass
	// Peer is the selection in words: "pods labelled app=web in namespaces
	// labelled env=prod", "198.18.0.0/15 except 198.18.1.0/24", "nodes
	// labelled role=infra", "domains *.example.com", "anything" (a rule
	// without peers), "nothing" (from: [], to: []).
	Peer  string `json:"peer"`
	Ports string `json:"ports"` // "8080/tcp, 53/udp", "http", or "any"
	// Policy and Rule are where the entry comes from.
	Policy policy.Ref `json:"policy"`
	Rule   string     `json:"rule"`
	// PodsToday is how many pods a pod peer selects today (nil for other
	// peers): it selects every pod labelled alike later as well.
	PodsToday *int `json:"podsToday,omitempty"`
	// Note says what the reader should know about the entry: a rule that
	// is invalid and decides in its fail-closed form, or one that an
	// earlier entry leaves nothing to.
	Note string `json:"note,omitempty"`
	// Source is the rule, for a caller that points at its field.
	Source *policy.Rule `json:"-"`
}

// Options choose the workloads.
type Options struct {
	// Namespaces, when set, are the only namespaces whose workloads are
	// reported.
	Namespaces []string
}

// Of returns the exposure of every workload of e's cluster (host-network
// pods excepted: policies never select them), by namespace, name and kind.
func Of(e *engine.Engine, opts Options) *Report {
	b := builder{e: e, r: &Report{}, blocks: map[engine.TierKey]*Block{}, relative: map[relativeKey]*Block{}, counts: map[string]int{}}
	type group struct {
		workload string
		key      engine.ProgramKey
	}
	byGroup := map[group]int{} // index in Workloads
	for _, p := range e.Cluster().Pods {
		if p.HostNetwork || len(opts.Namespaces) > 0 && !slices.Contains(opts.Namespaces, p.Namespace.Name) {
			continue
		}
		g := group{p.Workload(), e.ProgramKey(p)}
		i, ok := byGroup[g]
		if !ok {
			kind, name := p.Controller()
			w := Workload{Namespace: p.Namespace.Name, Kind: kind, Name: name}
			w.Ingress, w.Egress = b.side(p, policy.Ingress), b.side(p, policy.Egress)
			i = len(b.r.Workloads)
			byGroup[g] = i
			b.r.Workloads = append(b.r.Workloads, w)
		}
		b.r.Workloads[i].Pods = append(b.r.Workloads[i].Pods, p.Key())
	}
	slices.SortStableFunc(b.r.Workloads, func(a, b Workload) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.Kind, b.Kind))
	})
	return b.r
}

// builder lays out each distinct tier once.
type builder struct {
	e        *engine.Engine
	r        *Report
	blocks   map[engine.TierKey]*Block
	relative map[relativeKey]*Block // blocks whose peers depend on the namespace
	counts   map[string]int         // pod peers' members, by selection key
}

type relativeKey struct {
	key       engine.TierKey
	namespace string
}

// side is one direction of pod's program as blocks.
func (b *builder) side(p *state.Pod, dir policy.Direction) Side {
	var s Side
	takesBack := false
	for i := range engine.NumTiers {
		k := b.e.ProgramTierKey(p, dir, i)
		blk := b.blocks[k]
		if blk != nil && blk.relative {
			blk = b.relative[relativeKey{k, p.Namespace.Name}]
		}
		if blk == nil {
			blk = b.block(b.e.ProgramTier(p, dir, i), dir)
			if blk.relative {
				b.blocks[k] = &Block{relative: true}
				b.relative[relativeKey{k, p.Namespace.Name}] = blk
			} else {
				b.blocks[k] = blk
			}
		}
		if len(blk.Entries) > 0 {
			s.Blocks = append(s.Blocks, blk.ID)
			if !takesBack {
				for j, open := range blk.opens {
					if open != "" {
						s.Open = appendNew(s.Open, open)
						s.Openings = append(s.Openings, Opening{open, &blk.Entries[j]})
					}
				}
			}
			takesBack = takesBack || blk.takesBack
		}
		if k.Rest() == engine.Deny {
			s.Rest, s.IsolatedBy = "deny", blk.isolatedBy
			return s
		}
	}
	s.Rest = "allow"
	if !takesBack {
		s.Open = appendNew(s.Open, "anything")
	}
	return s
}

var tierWords = map[policy.Tier]string{policy.TierAdmin: "admin", policy.TierNetworkPolicy: "networkpolicy", policy.TierBaseline: "baseline"}

// block lays out one tier's rules as entries.
func (b *builder) block(tp engine.TierProgram, dir policy.Direction) *Block {
	blk := &Block{ID: len(b.r.Blocks), Tier: tierWords[tp.Tier]}
	for _, r := range tp.IsolatedBy {
		blk.isolatedBy = append(blk.isolatedBy, r.String())
	}
	if len(tp.Rules) == 0 {
		return blk // named by no side: kept out of the report
	}
	b.r.Blocks = append(b.r.Blocks, blk)
	// In the first-match tiers, an earlier entry on every port that takes
	// every pod (or everything) decides all that a later pod peer (or any
	// later peer) could match.
	var allPods, all string
	for _, ar := range tp.Rules {
		verdict := strings.ToLower(ar.Rule.Action.String())
		ports := portsText(ar.Rule)
		base := Entry{Verdict: verdict, Ports: ports, Policy: ar.Policy.Ref, Rule: ar.Rule.Label(), Source: ar.Rule}
		if ar.Rule.FailClosed {
			base.Note = "invalid: decides in its fail-closed form"
			if ar.Rule.Action == policy.Allow {
				base.Note = "invalid: matches nothing (its fail-closed form)"
			}
		}
		shadowed := func(pods bool) string {
			by := all
			if by == "" && pods {
				by = allPods
			}
			if by == "" || tp.Tier == policy.TierNetworkPolicy {
				return base.Note
			}
			return "never reached: " + by + " decides all of it first"
		}
		opens := func(what string) string {
			if blk.takesBack || verdict != "allow" || ar.Rule.FailClosed {
				return ""
			}
			return what
		}
		switch {
		case ar.Rule.AllPeers:
			en := base
			en.Peer = "anything"
			en.Note = shadowed(false)
			blk.Entries = append(blk.Entries, en)
			what := ""
			if ports == "any" {
				what = "anything"
			}
			blk.opens = append(blk.opens, opens(what))
		case len(ar.Peers) == 0:
			// from: [] (or only peers the rule's action cannot have):
			// no peer at all, listed so that the rule is seen.
			en := base
			en.Peer = "nothing"
			blk.Entries = append(blk.Entries, en)
			blk.opens = append(blk.opens, "")
		}
		for _, ps := range ar.Peers {
			en := base
			peer := ps.Peer()
			en.Peer = peerText(peer, dir)
			en.Note = shadowed(ps.Kind == policy.PeerPods)
			if ps.Kind == policy.PeerPods {
				blk.relative = blk.relative || peer.Pods.Namespaces.Relative()
				n, ok := b.counts[ps.Key]
				if !ok {
					for range ps.All() {
						n++
					}
					b.counts[ps.Key] = n
				}
				en.PodsToday = &n
			}
			blk.Entries = append(blk.Entries, en)
			blk.opens = append(blk.opens, opens(openTo(peer)))
		}
		if verdict != "allow" {
			blk.takesBack = true
		}
		if ports == "any" && !ar.Rule.FailClosed {
			by := ar.Policy.Ref.String() + " " + ar.Rule.Label()
			if ar.Rule.AllPeers && all == "" {
				all = by
			}
			for _, ps := range ar.Peers {
				if openTo(ps.Peer()) == "every namespace" && allPods == "" {
					allPods = by
				}
			}
		}
	}
	return blk
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// openTo names what a peer opens to when it is all of it: every pod of
// every namespace, or every address of a family.
func openTo(p policy.Peer) string {
	switch p.Kind {
	case policy.PeerPods:
		ns := p.Pods.Namespaces
		if ns.Match == policy.NamespaceLabels && ns.Selector.Text == "" && p.Pods.Pods.Text == "" {
			return "every namespace"
		}
	case policy.PeerIPBlock:
		if p.Block.CIDR.Bits() == 0 && len(p.Block.Except) == 0 {
			return p.Block.CIDR.String()
		}
	}
	return ""
}

// peerText spells a peer: pods by their labels and namespaces, blocks
// with their exceptions, nodes, domain names.
func peerText(p policy.Peer, dir policy.Direction) string {
	switch p.Kind {
	case policy.PeerPods:
		pods := "pods labelled " + p.Pods.Pods.Text
		if p.Pods.Pods.Text == "" {
			pods = "every pod"
		}
		return pods + " " + namespacesText(p.Pods.Namespaces)
	case policy.PeerIPBlock:
		return p.Block.String()
	case policy.PeerNodes:
		if p.Nodes.Text == "" {
			return "every node"
		}
		return "nodes labelled " + p.Nodes.Text
	case policy.PeerDomains:
		return "domains " + policy.JoinDomains(p.Domains, ", ")
	}
	return "unknown peer"
}

func namespacesText(ns policy.NamespaceSelector) string {
	switch ns.Match {
	case policy.NamespaceName:
		return "in namespace " + ns.Name
	case policy.NamespaceSelf:
		return "in the pod's own namespace"
	case policy.NamespaceNotSelf:
		return "in every namespace but the pod's own"
	case policy.NamespaceSameLabels:
		return "in namespaces with the same " + strings.Join(ns.Keys, ", ") + " as the pod's"
	case policy.NamespaceNotSameLabels:
		return "in namespaces whose " + strings.Join(ns.Keys, ", ") + " differ from the pod's"
	}
	if ns.Selector.Text == "" {
		return "in every namespace"
	}
	// The label the API server sets on every namespace: a selector on it
	// alone names one namespace.
	if name, ok := strings.CutPrefix(ns.Selector.Text, nameLabel+"="); ok && !strings.ContainsAny(name, ",()") {
		return "in namespace " + name
	}
	return "in namespaces labelled " + ns.Selector.Text
}

// nameLabel is the label that carries every namespace's name.
const nameLabel = "kubernetes.io/metadata.name"

// portsText is a rule's ports as written: numbers and ranges with their
// protocol, names as they are.
func portsText(r *policy.Rule) string {
	if r.AllPorts || len(r.Ports) == 0 && !r.FailClosed {
		return "any"
	}
	parts := make([]string, 0, len(r.Ports))
	for _, p := range r.Ports {
		parts = append(parts, p.String())
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
