package engine

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Update returns the engine for c and set, reusing what e resolved (DESIGN
// "Incremental") when c is e's snapshot with some pods replaced in place —
// same IDs, same namespaces, as state.Builder makes them. Then only the
// replaced pods are matched against the selectors, one pod against every
// selector; the selectors of the other pods are not looked at, and only
// selectors that e did not have (a new or changed policy's) are resolved.
// Otherwise, or when the replaced pods are many, it is New.
//
// The result decides exactly as New(c, set, opts) would. It may keep
// selectors that no policy uses any more, which can split matrix classes
// more finely than New would; once those outnumber the used ones it is New
// again. e itself is not changed.
func (e *Engine) Update(c *state.Cluster, set *policy.Set) *Engine {
	enforced := set.Enforced()
	next, ok := e.updated(c, enforced)
	if !ok {
		return New(c, set, e.opts)
	}
	if enforced != set {
		if e.staged == nil {
			next.staged = newEngine(newIndex(c, false), set, e.opts, nil)
		} else if next.staged, ok = e.staged.updated(c, set); !ok {
			next.staged = newEngine(newIndex(c, false), set, e.opts, nil)
		}
	}
	return next
}

// updated is the engine of set over e's atoms carried over to c, when they
// can be.
func (e *Engine) updated(c *state.Cluster, set *policy.Set) (*Engine, bool) {
	e.finish() // next carries the members over
	ix, ok := e.ix.next(c)
	if !ok {
		return nil, false
	}
	next := newEngine(ix, set, e.opts, e)
	if set == e.set {
		return next, true // no selector came or went: e's count holds
	}
	return next, !next.garbage()
}

// garbage reports whether most of the pod atoms are used by no policy.
func (e *Engine) garbage() bool {
	used := make([]bool, len(e.ix.podAtoms))
	n := 0
	mark := func(a int32) {
		if !used[a] {
			used[a] = true
			n++
		}
	}
	for _, p := range e.policies {
		mark(p.subject)
		for _, rules := range p.rules {
			for _, r := range rules {
				for _, peer := range r.peers {
					if peer.Kind == policy.PeerPods {
						mark(peer.atom)
					}
				}
			}
		}
	}
	return len(used) > 2*n+1024
}

// next returns a copy of ix over c, with the pods that c replaced or added
// matched again against every atom, or false when c is not ix's snapshot
// with some pods replaced, added or deleted (state.Builder's snapshots).
// When pods came or went, IDs after them moved: every ID list is
// renumbered. ix is not changed: whatever next changes it copies first.
func (ix *index) next(c *state.Cluster) (*index, bool) {
	old := ix.c
	if !sameSlice(c.Namespaces, old.Namespaces) {
		return nil, false
	}
	from, changed, ok := matchPods(old, c)
	if !ok || len(changed) > len(c.Pods)/8 {
		return nil, false // resolving afresh is cheaper
	}
	// Shared until written: appends to the clipped slices copy them, and
	// own copies the maps and member lists before a new atom goes in.
	nx := &index{
		c:          c,
		nsIDs:      ix.nsIDs, // namespaces are the same
		nsLabels:   ix.nsLabels,
		podLabels:  ix.podLabels,
		nsAtoms:    slices.Clip(ix.nsAtoms),
		nsAtomIDs:  ix.nsAtomIDs,
		nsMember:   ix.nsMember,
		podAtoms:   slices.Clip(ix.podAtoms),
		podAtomIDs: ix.podAtomIDs,
		podMember:  ix.podMember,
		inherited:  true,
		from:       from,
	}
	if len(changed) == 0 && from == nil {
		return nx, true
	}
	nx.replaced = changed
	nx.podAtoms = slices.Clone(ix.podAtoms)
	was := func(id int32) []int32 { return ix.podMember[id] } // a pod's atoms in ix
	if from == nil {
		nx.podLabels = ix.podLabels.replaced(old, c, changed)
		nx.podMember = slices.Clone(ix.podMember) // the lists of the changed pods are new
	} else {
		nx.renumber(ix, from)
		was = func(id int32) []int32 {
			if from[id] < 0 {
				return nil
			}
			return ix.podMember[from[id]]
		}
	}
	for _, id := range changed {
		p := c.Pods[id]
		before := was(id)
		var member []int32
		for a := range nx.podAtoms {
			atom := &nx.podAtoms[a]
			now := nx.atomHas(int32(a), p)
			if now {
				member = append(member, int32(a))
			}
			if now != has(before, int32(a)) {
				atom.members = toggled(atom.members, id, now)
			}
		}
		nx.podMember[id] = member
	}
	return nx, true
}

// matchPods pairs the pods of c with those of old (both in snapshot order):
// from[id] is the old ID of c's pod id, -1 for a new pod, and from is nil
// when every pod kept its ID; changed are the IDs in c of the pods to match
// against the atoms again: new ones, and those whose namespace, labels or
// host networking are not what they were. ok is false if c's pods are not
// in order.
func matchPods(old, c *state.Cluster) (from []int32, changed []int32, ok bool) {
	aligned := len(c.Pods) == len(old.Pods)
	for i, p := range c.Pods {
		if !aligned {
			break
		}
		if q := old.Pods[i]; p != q {
			aligned = p.ID == q.ID && p.Namespace == q.Namespace && p.Name == q.Name
			changed = append(changed, int32(i))
		}
	}
	if aligned {
		return nil, changed, true
	}
	from, changed = make([]int32, len(c.Pods)), changed[:0]
	j := 0
	for id, p := range c.Pods {
		if id > 0 && !c.Pods[id-1].Before(p) {
			return nil, nil, false
		}
		for j < len(old.Pods) && old.Pods[j].Before(p) {
			j++ // deleted
		}
		if j < len(old.Pods) && old.Pods[j].Namespace.Name == p.Namespace.Name && old.Pods[j].Name == p.Name {
			if q := old.Pods[j]; p != q && (p.Namespace != q.Namespace || p.HostNetwork != q.HostNetwork || !maps.Equal(p.Labels, q.Labels)) {
				changed = append(changed, int32(id))
			}
			from[id] = int32(j)
			j++
			continue
		}
		from[id] = -1
		changed = append(changed, int32(id))
	}
	return from, changed, true
}

// renumber fills nx's pod ID lists from ix's for the pods of nx.c, which
// has them at other IDs (from): atom members and each pod's atoms carried
// over (a deleted pod's dropped), the label index made anew.
func (nx *index) renumber(ix *index, from []int32) {
	to := make([]int32, len(ix.c.Pods))
	for i := range to {
		to[i] = -1
	}
	for id, old := range from {
		if old >= 0 {
			to[old] = int32(id)
		}
	}
	for a := range nx.podAtoms {
		members := make([]int32, 0, len(nx.podAtoms[a].members))
		for _, m := range nx.podAtoms[a].members {
			if to[m] >= 0 {
				members = append(members, to[m]) // still ascending: to keeps the order
			}
		}
		nx.podAtoms[a].members = members
	}
	nx.podMember = make([][]int32, len(nx.c.Pods))
	for id, old := range from {
		if old >= 0 {
			nx.podMember[id] = slices.Clip(ix.podMember[old])
		}
	}
	nx.podLabels = labelIndex{}
	for _, p := range nx.c.Pods {
		if !p.HostNetwork {
			nx.podLabels.add(p.ID, p.Labels)
		}
	}
}

// sameSlice reports whether a and b are the same slice, not only equal ones.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// clipAll copies lists with every list clipped, so that appending to one
// copies it instead of writing into the original's array.
func clipAll(lists [][]int32) [][]int32 {
	out := make([][]int32, len(lists))
	for i, l := range lists {
		out[i] = slices.Clip(l)
	}
	return out
}

// toggled returns a copy of the ascending list ids with id added (in) or
// removed.
func toggled(ids []int32, id int32, in bool) []int32 {
	i, found := slices.BinarySearch(ids, id)
	switch {
	case in && !found:
		out := make([]int32, 0, len(ids)+1)
		return append(append(append(out, ids[:i]...), id), ids[i:]...)
	case !in && found:
		out := make([]int32, 0, len(ids)-1)
		return append(append(out, ids[:i]...), ids[i+1:]...)
	}
	return ids
}

// replaced returns ix as it is for c, where the pods changed replaced those
// of old: posting lists that change are copied, the rest shared.
func (ix labelIndex) replaced(old, c *state.Cluster, changed []int32) labelIndex {
	out := maps.Clone(ix)
	copied := map[string]bool{}
	edit := func(id int32, k, v string, in bool) {
		if !copied[k] {
			copied[k] = true
			out[k] = maps.Clone(out[k])
			if out[k] == nil {
				out[k] = map[string][]int32{}
			}
		}
		if l := toggled(out[k][v], id, in); len(l) > 0 {
			out[k][v] = l
		} else {
			delete(out[k], v)
		}
	}
	indexed := func(p *state.Pod) labels.Set {
		if p.HostNetwork {
			return nil // never selected, so never indexed
		}
		return p.Labels
	}
	for _, id := range changed {
		was, now := indexed(old.Pods[id]), indexed(c.Pods[id])
		for k, v := range was {
			if nv, ok := now[k]; !ok || nv != v {
				edit(id, k, v, false)
			}
		}
		for k, v := range now {
			if wv, ok := was[k]; !ok || wv != v {
				edit(id, k, v, true)
			}
		}
	}
	return out
}
