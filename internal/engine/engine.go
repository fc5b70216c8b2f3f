package engine

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Options tune evaluation.
type Options struct {
	// LegacyNamespaceIsolation evaluates ingress as the v1beta1 proposal
	// did: a namespace annotated DefaultDeny isolates all its pods for
	// ingress, and NetworkPolicies in namespaces without the annotation do
	// not isolate anything for ingress.
	LegacyNamespaceIsolation bool
}

// Engine decides flows for one snapshot and one policy set. It is immutable
// after New (NewLazy's completes itself once, under a lock, when first asked
// for every member of a selector) and safe for concurrent use.
type Engine struct {
	c    *state.Cluster
	set  *policy.Set
	opts Options
	ix   *index

	policies  []*compiled       // every policy, in tier order
	rules     rulesByPolicyRule // for RuleMatches, built on first use
	byPolicy  compiledByPolicy  // for Members, built on first use
	bySubject []tierLists       // subject atom -> policies
	applies   applicable        // pod ID -> policies selecting it, in order
	relative  bool              // some peer selects namespaces relative to the subject
	blocks    []policy.IPBlock  // distinct IP blocks of all peers, for classes

	// staged decides with the staged policies too (nil when none is).
	staged *Engine

	// lazy is what NewLazy left for later; nil after New.
	lazy *lazy
}

// compiled is a policy with its selectors turned into atoms.
type compiled struct {
	*policy.Policy
	rank    int // position in evaluation order
	subject int32
	rules   [2][]compiledRule
}

type compiledRule struct {
	*policy.Rule
	peers []compiledPeer
}

type compiledPeer struct {
	policy.Peer
	atom int32 // PeerPods
}

// New resolves every selector of set against c. The engine decides with the
// enforced policies; when some are staged, Staged returns a second engine
// that decides as if they were enforced too.
func New(c *state.Cluster, set *policy.Set, opts Options) *Engine {
	return build(c, set, opts, false)
}

// NewLazy is New for a front end that decides a few flows (explain): it
// compiles the policies but resolves no pod selector. A flow is decided
// by matching its two pods against the selectors that could select them;
// what needs every member of a selector (the matrix, Members, Program,
// Update, ...) resolves them all on first use, and the engine is then
// as New makes it. The verdicts, traces and findings are New's. On the
// 100k-pod synthetic cluster, resolving is the most of New's time, for
// 62,963 pod selectors of which a flow asks a few hundred.
func NewLazy(c *state.Cluster, set *policy.Set, opts Options) *Engine {
	return build(c, set, opts, true)
}

func build(c *state.Cluster, set *policy.Set, opts Options, lazy bool) *Engine {
	enforced := set.Enforced()
	e := newEngine(newIndex(c, lazy), enforced, opts, nil)
	if enforced != set {
		e.staged = newEngine(newIndex(c, lazy), set, opts, nil)
	}
	return e
}

// Staged returns the engine that enforces the staged policies as well, or
// nil when no policy is staged: what the cluster would do once they are.
func (e *Engine) Staged() *Engine { return e.staged }

// newEngine compiles set over the atoms of ix, resolving the ones it lacks.
// prev, when not nil, is the engine whose index ix continues (Update): its
// compiled policies are reused where the policy is the same at the same
// rank, and its lists of applicable policies when only policies changed in
// place.
func newEngine(ix *index, set *policy.Set, opts Options, prev *Engine) *Engine {
	e := &Engine{c: ix.c, set: set, opts: opts, ix: ix}
	if prev != nil && prev.set == set {
		// The same policies (a pod changed): what they compiled to stays.
		e.policies, e.bySubject, e.blocks, e.relative = prev.policies, prev.bySubject, prev.blocks, prev.relative
		e.carryApplicable(prev)
		return e
	}
	policies := set.Policies()
	e.policies = make([]*compiled, 0, len(policies))
	blockIDs := map[string]bool{}
	// inPlace: every policy has the rank and subject it had in prev.
	inPlace := prev != nil && len(prev.policies) == len(policies)
	for rank, p := range policies {
		var cp *compiled
		if prev != nil && rank < len(prev.policies) && prev.policies[rank].Policy == p {
			cp = prev.policies[rank]
		} else {
			cp = e.compile(p, rank)
			inPlace = inPlace && prev.policies[rank].subject == cp.subject
		}
		for _, rules := range cp.rules {
			for _, r := range rules {
				for _, peer := range r.peers {
					switch peer.Kind {
					case policy.PeerPods:
						e.relative = e.relative || peer.Pods.Namespaces.Relative()
					case policy.PeerIPBlock:
						if k := peer.Block.String(); !blockIDs[k] {
							blockIDs[k] = true
							e.blocks = append(e.blocks, peer.Block)
						}
					}
				}
			}
		}
		e.policies = append(e.policies, cp)
	}
	e.bySubject = make([]tierLists, len(ix.podAtoms))
	for _, cp := range e.policies {
		t := tierOf(cp.Tier)
		e.bySubject[cp.subject][t] = append(e.bySubject[cp.subject][t], cp)
	}
	switch {
	case ix.lazy:
		e.lazy = newLazy(e)
	case inPlace:
		e.carryApplicable(prev)
	default:
		e.indexApplicable()
	}
	return e
}

// compile turns a policy's selectors into atoms.
func (e *Engine) compile(p *policy.Policy, rank int) *compiled {
	cp := &compiled{Policy: p, rank: rank, subject: e.ix.atomOf(p.Subject)}
	for _, d := range []policy.Direction{policy.Ingress, policy.Egress} {
		for _, r := range p.Rules[d] {
			cr := compiledRule{Rule: r}
			for _, peer := range r.Peers {
				if peer.Kind == policy.PeerDomains && !r.DomainsMatch() {
					continue // the API supports domainNames only in Allow rules (policy/domains.go)
				}
				cpe := compiledPeer{Peer: peer}
				if peer.Kind == policy.PeerPods {
					cpe.atom = e.ix.atomOf(peer.Pods)
				}
				cr.peers = append(cr.peers, cpe)
			}
			cp.rules[d] = append(cp.rules[d], cr)
		}
	}
	return cp
}

// numTiers are the tiers of the walk (tiers.go): admin, NetworkPolicy,
// baseline.
const numTiers = len(tiers)

// tierLists are policies by tier (tierOf), each list in evaluation order.
type tierLists [numTiers][]*compiled

// tierOf is where a tier's policies are in tierLists and podTiers: its
// place in tiers, the walk's one list (a policy's tier is always one of
// them: policy.Normalize gives no other).
func tierOf(t policy.Tier) int {
	for i := range tiers {
		if tiers[i].tier == t {
			return i
		}
	}
	panic(fmt.Sprintf("engine: tier %v is not in the walk", t))
}

// applicable lists, for every pod, the policies whose subject selects it,
// in evaluation order, one list per tier. Pods whose subjects of a tier
// are the same share that tier's list, so a cluster of 100k pods holds only
// as many lists as there are distinct subject sets of a tier. A list per
// tier, not one for all: the admin policies that select a pod are the same
// over many namespaces whose NetworkPolicies differ, and one list for all
// would copy them into every namespace's (97 % of 4.5 million entries on
// the 100k-pod synthetic cluster).
type applicable struct {
	lists  []*tierList       // policies of one tier
	listOf [][numTiers]int32 // pod ID -> index in lists, per tier
	index  map[string]int32  // tier and subject atoms of the list's pods -> index in lists
}

// indexApplicable makes e.applies from scratch.
func (e *Engine) indexApplicable() {
	e.applies = applicable{listOf: make([][numTiers]int32, len(e.c.Pods)), index: map[string]int32{}}
	var keys [numTiers][]byte
	for _, p := range e.c.Pods {
		e.listsFor(&keys, p.ID)
	}
}

// listsFor points pod at its lists, making a list if no pod had its
// subject atoms of that tier before; keys are buffers.
func (e *Engine) listsFor(keys *[numTiers][]byte, pod int32) {
	for t := range keys {
		keys[t] = append(keys[t][:0], byte(t))
	}
	for _, atom := range e.ix.podMember[pod] {
		if int(atom) >= len(e.bySubject) {
			continue
		}
		for t, ps := range e.bySubject[atom] {
			if len(ps) > 0 {
				keys[t] = binary.LittleEndian.AppendUint32(keys[t], uint32(atom))
			}
		}
	}
	for t, key := range keys {
		i, ok := e.applies.index[string(key)]
		if !ok {
			var list []*compiled
			for k := 1; k < len(key); k += 4 {
				list = append(list, e.bySubject[binary.LittleEndian.Uint32(key[k:])][t]...)
			}
			slices.SortFunc(list, func(a, b *compiled) int { return a.rank - b.rank })
			i = int32(len(e.applies.lists))
			e.applies.index[string(key)] = i
			e.applies.lists = append(e.applies.lists, newTierList(t, list))
		}
		e.applies.listOf[pod][t] = i
	}
}

// carryApplicable makes e.applies from prev's when every policy kept its
// rank and subject: the lists stay, with the policies that changed swapped
// in, and only the pods the index replaced are placed again.
func (e *Engine) carryApplicable(prev *Engine) {
	swapped := map[*compiled]*compiled{}
	for i, cp := range e.policies {
		if old := prev.policies[i]; old != cp {
			swapped[old] = cp
		}
	}
	e.applies = prev.applies
	if len(swapped) > 0 {
		e.applies.lists = make([]*tierList, len(prev.applies.lists))
		for i, list := range prev.applies.lists {
			if slices.ContainsFunc(list.policies, func(cp *compiled) bool { return swapped[cp] != nil }) {
				ps := slices.Clone(list.policies)
				for j, cp := range ps {
					if to := swapped[cp]; to != nil {
						ps[j] = to
					}
				}
				// Worked out again: a changed policy may isolate other
				// directions (a policy changes in place only within its tier).
				list = newTierList(list.tier, ps)
			}
			e.applies.lists[i] = list
		}
	}
	if len(e.ix.replaced) > 0 || e.ix.from != nil {
		e.applies.lists = slices.Clip(e.applies.lists)
		if from := e.ix.from; from != nil { // pods moved: new pods are in replaced
			e.applies.listOf = make([][numTiers]int32, len(from))
			for id, old := range from {
				if old >= 0 {
					e.applies.listOf[id] = prev.applies.listOf[old]
				}
			}
		} else {
			e.applies.listOf = slices.Clone(prev.applies.listOf)
		}
		e.applies.index = maps.Clone(prev.applies.index)
		var keys [numTiers][]byte
		for _, pod := range e.ix.replaced {
			e.listsFor(&keys, pod)
		}
	}
}

// Cluster returns the snapshot the engine decides for.
func (e *Engine) Cluster() *state.Cluster { return e.c }

// Policies returns the policy set the engine decides with: without the
// staged policies (Staged().Policies() has them).
func (e *Engine) Policies() *policy.Set { return e.set }

// Options returns the options the engine decides with.
func (e *Engine) Options() Options { return e.opts }

// Applicable returns the policies whose subject selects pod, in evaluation
// order: the only policies whose rules decide the pod's ingress and egress.
// Host-network pods and pods of another snapshot have none.
func (e *Engine) Applicable(pod *state.Pod) []*policy.Policy {
	if !e.ours(pod) {
		return nil
	}
	lists := e.applicable(pod)
	n := 0
	for _, list := range lists {
		n += len(list.policies)
	}
	out := make([]*policy.Policy, 0, n)
	for _, list := range lists {
		for _, cp := range list.policies {
			out = append(out, cp.Policy)
		}
	}
	return out
}

// ours reports whether policies can select pod: one of this snapshot's,
// not on the host's network.
func (e *Engine) ours(pod *state.Pod) bool {
	return !pod.HostNetwork && int(pod.ID) < len(e.c.Pods) && e.c.Pods[pod.ID] == pod
}

// Members returns the pods a policy's subject selects.
func (e *Engine) Members(p *policy.Policy) []*state.Pod {
	if cp := e.byPolicy.get(e)[p]; cp != nil {
		return e.pods(e.members(cp.subject))
	}
	return nil
}

func (e *Engine) pods(ids []int32) []*state.Pod {
	out := make([]*state.Pod, len(ids))
	for i, id := range ids {
		out[i] = e.c.Pods[id]
	}
	return out
}

// SelectorStats counts the distinct selectors resolved and their members.
type SelectorStats struct {
	NamespaceSelectors, PodSelectors int
	Memberships                      int // sum of members over pod selectors
}

// Stats reports the work New did (NewLazy's engine resolves its selectors
// to count their members).
func (e *Engine) Stats() SelectorStats {
	e.finish()
	s := SelectorStats{NamespaceSelectors: len(e.ix.nsAtoms), PodSelectors: len(e.ix.podAtoms)}
	for _, a := range e.ix.podAtoms {
		s.Memberships += len(a.members)
	}
	return s
}

// Selectors counts the selector atoms of the policies (a selector in the
// scope it applies in: one selector of many policies in many namespaces
// is many atoms), as Stats does, without resolving them.
func (e *Engine) Selectors() int { return len(e.ix.nsAtoms) + len(e.ix.podAtoms) }

// applicable returns the policies whose subject selects pod, by tier, in
// evaluation order.
func (e *Engine) applicable(pod *state.Pod) podTiers {
	var out podTiers
	if !e.resolved() {
		for t, list := range e.lazy.applicable(e, pod) {
			out[t] = newTierList(t, list)
		}
		return out
	}
	for t, i := range e.applies.listOf[pod.ID] {
		out[t] = e.applies.lists[i]
	}
	return out
}

// PriorityOverlaps warns about admin- or baseline-tier policies of equal priority that
// select a common pod with rules in the same direction: upstream leaves their
// order undefined; netpol's order is documented in policy.Set.
func (e *Engine) PriorityOverlaps() diag.List {
	var out diag.List
	baselineStart := len(e.set.Admin) + len(e.set.NetworkPolicies)
	for _, tier := range [][]*compiled{e.policies[:len(e.set.Admin)], e.policies[baselineStart:]} {
		out = append(out, e.tierOverlaps(tier)...)
	}
	return out
}

// tierOverlaps finds the equal-priority pairs of one ordered tier.
func (e *Engine) tierOverlaps(tier []*compiled) diag.List {
	var out diag.List
	for i := 0; i < len(tier); i++ {
		for j := i + 1; j < len(tier) && tier[j].Priority == tier[i].Priority; j++ {
			a, b := tier[i], tier[j]
			var dirs []string
			for _, d := range []policy.Direction{policy.Ingress, policy.Egress} {
				if len(a.rules[d]) > 0 && len(b.rules[d]) > 0 {
					dirs = append(dirs, d.String())
				}
			}
			if len(dirs) == 0 {
				continue
			}
			pod, ok := e.firstCommon(a.subject, b.subject)
			if !ok {
				continue
			}
			out = append(out, diag.Diagnostic{Severity: diag.Warning, Origin: b.Origin, Object: b.Ref.String(), Field: "spec.priority",
				Message: fmt.Sprintf("same priority (%d) as %s, and both have %s rules for pod %s: the API leaves their order undefined; netpol evaluates %s first (by kind, then name)",
					a.Priority, a.Ref, strings.Join(dirs, " and "), e.c.Pods[pod].Key(), a.Ref)})
		}
	}
	return out
}

func firstCommon(a, b []int32) (int32, bool) {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			return a[i], true
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return 0, false
}
