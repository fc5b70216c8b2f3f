package engine

import (
	"encoding/binary"
	"fmt"
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
// after New and safe for concurrent use.
type Engine struct {
	c    *state.Cluster
	set  *policy.Set
	opts Options
	ix   *index

	policies  []*compiled           // every policy, in tier order
	rules     rulesByPolicyRule     // for RuleMatches, built on first use
	bySubject map[int32][]*compiled // subject atom -> policies
	applies   [][]*compiled         // pod ID -> policies selecting it, in order (shared)
	relative  bool                  // some peer selects namespaces relative to the subject
	blocks    []policy.IPBlock      // distinct IP blocks of all peers, for classes

	// staged decides with the staged policies too (nil when none is).
	staged *Engine
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
	enforced := set.Enforced()
	e := newEngine(newIndex(c), enforced, opts)
	if enforced != set {
		e.staged = newEngine(newIndex(c), set, opts)
	}
	return e
}

// Staged returns the engine that enforces the staged policies as well, or
// nil when no policy is staged: what the cluster would do once they are.
func (e *Engine) Staged() *Engine { return e.staged }

// newEngine compiles set over the atoms of ix, resolving the ones it lacks.
func newEngine(ix *index, set *policy.Set, opts Options) *Engine {
	e := &Engine{c: ix.c, set: set, opts: opts, ix: ix, bySubject: map[int32][]*compiled{}}
	blockIDs := map[string]bool{}
	for rank, p := range set.Policies() {
		cp := &compiled{Policy: p, rank: rank, subject: e.ix.atomOf(p.Subject)}
		for _, d := range []policy.Direction{policy.Ingress, policy.Egress} {
			for _, r := range p.Rules[d] {
				cr := compiledRule{Rule: r}
				for _, peer := range r.Peers {
					cpe := compiledPeer{Peer: peer}
					switch peer.Kind {
					case policy.PeerPods:
						cpe.atom = e.ix.atomOf(peer.Pods)
						e.relative = e.relative || peer.Pods.Namespaces.Relative()
					case policy.PeerIPBlock:
						if k := peer.Block.String(); !blockIDs[k] {
							blockIDs[k] = true
							e.blocks = append(e.blocks, peer.Block)
						}
					}
					cr.peers = append(cr.peers, cpe)
				}
				cp.rules[d] = append(cp.rules[d], cr)
			}
		}
		e.policies = append(e.policies, cp)
		e.bySubject[cp.subject] = append(e.bySubject[cp.subject], cp)
	}
	e.indexApplicable()
	return e
}

// indexApplicable lists, for every pod, the policies whose subject selects
// it. Pods in the same subject selectors share one list, so a cluster of
// 100k pods holds only as many lists as there are distinct subject sets.
func (e *Engine) indexApplicable() {
	e.applies = make([][]*compiled, len(e.c.Pods))
	shared := map[string][]*compiled{}
	var key []byte
	for _, p := range e.c.Pods {
		key = key[:0]
		for _, atom := range e.ix.podMember[p.ID] {
			if len(e.bySubject[atom]) > 0 {
				key = binary.LittleEndian.AppendUint32(key, uint32(atom))
			}
		}
		list, ok := shared[string(key)]
		if !ok {
			for _, atom := range e.ix.podMember[p.ID] {
				list = append(list, e.bySubject[atom]...)
			}
			slices.SortFunc(list, func(a, b *compiled) int { return a.rank - b.rank })
			shared[string(key)] = list
		}
		e.applies[p.ID] = list
	}
}

// Cluster returns the snapshot the engine decides for.
func (e *Engine) Cluster() *state.Cluster { return e.c }

// Policies returns the policy set the engine decides with: without the
// staged policies (Staged().Policies() has them).
func (e *Engine) Policies() *policy.Set { return e.set }

// Members returns the pods a policy's subject selects.
func (e *Engine) Members(p *policy.Policy) []*state.Pod {
	for _, cp := range e.policies {
		if cp.Policy == p {
			return e.pods(e.ix.podAtoms[cp.subject].members)
		}
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

// Stats reports the work New did.
func (e *Engine) Stats() SelectorStats {
	s := SelectorStats{NamespaceSelectors: len(e.ix.nsAtoms), PodSelectors: len(e.ix.podAtoms)}
	for _, a := range e.ix.podAtoms {
		s.Memberships += len(a.members)
	}
	return s
}

// applicable returns the policies whose subject selects pod, in evaluation
// order.
func (e *Engine) applicable(pod *state.Pod) []*compiled { return e.applies[pod.ID] }

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
			pod, ok := firstCommon(e.ix.podAtoms[a.subject].members, e.ix.podAtoms[b.subject].members)
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
