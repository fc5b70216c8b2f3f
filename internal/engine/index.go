// Package engine decides flows: given a cluster snapshot (state) and the
// tiered model (policy) it answers "is src -> dst:port allowed, and why?",
// for one flow (Verdict) or for every pair of pods (Matrix). It sits below
// policy and state and must not import cli; compile and the front ends build
// on it.
//
// Fast by construction: every distinct selector becomes an "atom" whose
// members are computed once, through label indexes and once per distinct
// label set, when the engine is built; a flow is then decided by membership
// look-ups, never by re-reading a selector. The matrix groups pods that no
// selector tells apart into classes and decides class pairs, not pod pairs.
// A front end that decides a few flows (explain) builds with NewLazy
// instead: the atoms are compiled but their members are computed only when
// something needs them all, and until then the few flows match their own
// pods against the selectors that can select them.
package engine

import (
	"encoding/binary"
	"iter"
	"maps"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// labelIndex maps label key -> value -> item IDs (ascending), so that a
// selector with an equality or existence requirement looks at the items that
// can match instead of all of them.
type labelIndex map[string]map[string][]int32

func (ix labelIndex) add(id int32, l labels.Set) {
	for k, v := range l {
		vals := ix[k]
		if vals == nil {
			vals = map[string][]int32{}
			ix[k] = vals
		}
		vals[v] = append(vals[v], id)
	}
}

// candidates returns the IDs that can match sel, taken from the posting
// lists of its most selective equality or existence requirement, when that
// list is shorter than limit; otherwise narrowed is false and the caller scans
// its own, smaller, candidate set. Lists are sized before they are built, so
// a namespace-local selector never pays for a cluster-wide list.
func (ix labelIndex) candidates(sel labels.Selector, limit int) (ids []int32, narrowed bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil, true // labels.Nothing()
	}
	best, bestSize := -1, limit
	for i, r := range reqs {
		size := 0
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			for v := range r.Values() {
				size += len(ix[r.Key()][v])
			}
		case selection.Exists:
			for _, l := range ix[r.Key()] {
				size += len(l)
			}
		default:
			continue
		}
		if size < bestSize {
			best, bestSize = i, size
		}
	}
	if best < 0 {
		return nil, false
	}
	r := reqs[best]
	var lists [][]int32
	if r.Operator() == selection.Exists {
		for _, l := range ix[r.Key()] {
			lists = append(lists, l)
		}
	} else {
		for v := range r.Values() {
			lists = append(lists, ix[r.Key()][v])
		}
	}
	if len(lists) == 1 {
		return lists[0], true // posting lists are ascending already
	}
	ids = make([]int32, 0, bestSize)
	for _, l := range lists {
		ids = append(ids, l...)
	}
	slices.Sort(ids)
	return slices.Compact(ids), true
}

// nsAtom is a distinct namespace label selector and the namespaces it selects.
type nsAtom struct {
	sel     policy.Selector
	members []int32 // namespace indexes, ascending
}

// scope is where a pod atom looks for pods.
type scope struct {
	kind scopeKind
	name string // scopeName: a namespace
	atom int32  // scopeAtom: an nsAtom
}

type scopeKind uint8

const (
	scopeAny  scopeKind = iota // every namespace (relative peers check the namespace later)
	scopeName                  // one namespace by name
	scopeAtom                  // namespaces of an nsAtom
)

// podAtom is a distinct (namespace scope, pod selector) and its members.
type podAtom struct {
	scope   scope
	sel     policy.Selector
	members []int32 // pod IDs, ascending; never host-network pods
}

type podAtomKey struct {
	kind scopeKind
	name string
	atom int32
	sel  string
}

// index resolves every selector of a policy set against a cluster.
type index struct {
	c         *state.Cluster
	nsIDs     map[*state.Namespace]int32
	nsLabels  labelIndex
	podLabels labelIndex

	nsAtoms   []nsAtom
	nsAtomIDs map[string]int32
	nsMember  [][]int32 // namespace index -> nsAtom IDs, ascending

	podAtoms   []podAtom
	podAtomIDs map[podAtomKey]int32
	podMember  [][]int32 // pod ID -> podAtom IDs, ascending

	// sets groups the pods by label set, so that resolving a pod selector
	// evaluates it once per set rather than once per pod in scope; nil in
	// an index that next made, which matches pod by pod.
	sets *labelSets

	// lazy: pod atoms are registered without their members until
	// resolveAll (NewLazy), which makes the pod label index and the
	// label sets too (firstCommon may have made the sets before).
	lazy bool

	// replaced are the pods that next matched again: those of c that are
	// not the previous index's.
	replaced []int32
	// from maps each pod ID to the pod's ID in the previous index (-1 for a
	// new pod), when next renumbered them; nil when IDs stayed.
	from []int32
	// inherited: the atom maps and member lists are the previous index's
	// (next shares them); resolving a new atom copies them first.
	inherited bool
}

// own copies what the index shares with the one it was made from, before
// the first new atom is written into it.
func (ix *index) own() {
	if !ix.inherited {
		return
	}
	ix.nsAtomIDs, ix.podAtomIDs = maps.Clone(ix.nsAtomIDs), maps.Clone(ix.podAtomIDs)
	ix.nsMember, ix.podMember = clipAll(ix.nsMember), clipAll(ix.podMember)
	ix.inherited = false
}

// newIndex indexes c's labels; lazy is NewLazy's index.
func newIndex(c *state.Cluster, lazy bool) *index {
	ix := &index{
		c:          c,
		nsIDs:      make(map[*state.Namespace]int32, len(c.Namespaces)),
		nsLabels:   labelIndex{},
		nsAtomIDs:  map[string]int32{},
		podAtomIDs: map[podAtomKey]int32{},
		nsMember:   make([][]int32, len(c.Namespaces)),
		podMember:  make([][]int32, len(c.Pods)),
		lazy:       lazy,
	}
	for i, ns := range c.Namespaces {
		ix.nsIDs[ns] = int32(i)
		ix.nsLabels.add(int32(i), ns.Labels)
	}
	if !lazy {
		ix.indexPods()
	}
	return ix
}

// indexPods makes the pod label index and the label sets (a lazy index
// may have the sets already: firstCommon).
func (ix *index) indexPods() {
	ix.podLabels = labelIndex{}
	for _, p := range ix.c.Pods {
		if !p.HostNetwork {
			ix.podLabels.add(p.ID, p.Labels)
		}
	}
	if ix.sets == nil {
		ix.sets = newLabelSets(ix.c.Pods)
	}
}

// labelSets numbers the distinct label sets of a snapshot's pods and
// remembers, per pod selector, which sets it matches. No selector tells
// apart two pods with equal labels, and pods are many more than label sets:
// the 100k-pod synthetic cluster has 37 label sets, and its 96 distinct pod
// selectors, in 62,963 (namespace scope, selector) atoms, were evaluated
// 3.7 million times when they were evaluated pod by pod.
type labelSets struct {
	of     []int32      // pod ID -> its set
	labels []labels.Set // set -> the labels of its pods
	// matched are, per selector text, whether the selector matches
	// each set: 0 not evaluated yet, matchNo or matchYes.
	matched map[string][]uint8
	// budget is how many more bytes matched may take: a cluster whose
	// pods all have labels of their own has as many sets as pods, and a
	// table per selector would then cost more than it saves.
	budget int
}

const (
	matchNo uint8 = iota + 1
	matchYes
)

// hostNetworkSet is the set of the host-network pods, which no selector
// selects.
const hostNetworkSet = -1

func newLabelSets(pods []*state.Pod) *labelSets {
	ls := &labelSets{of: make([]int32, len(pods)), matched: map[string][]uint8{}, budget: max(1<<20, 8*len(pods))}
	ids := map[string]int32{}
	var key []byte
	var keys []string
	for _, p := range pods {
		if p.HostNetwork {
			ls.of[p.ID] = hostNetworkSet
			continue
		}
		key, keys = labelSetKey(key[:0], keys[:0], p.Labels)
		id, ok := ids[string(key)]
		if !ok {
			id = int32(len(ls.labels))
			ids[string(key)] = id
			ls.labels = append(ls.labels, p.Labels)
		}
		ls.of[p.ID] = id
	}
	return ls
}

// labelSetKey appends to key the labels of l, sorted by key, each key and
// value preceded by its length; keys is a buffer.
func labelSetKey(key []byte, keys []string, l labels.Set) ([]byte, []string) {
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := l[k]
		key = binary.AppendUvarint(key, uint64(len(k)))
		key = append(key, k...)
		key = binary.AppendUvarint(key, uint64(len(v)))
		key = append(key, v...)
	}
	return key, keys
}

// matcher returns the test of sel against the labels of a pod, by its
// ID: by label set when ix has the sets and the budget allows. A
// host-network pod is never selected.
func (ix *index) matcher(sel policy.Selector) func(id int32) bool {
	podByPod := func(id int32) bool {
		p := ix.c.Pods[id]
		return !p.HostNetwork && sel.Matches(p.Labels)
	}
	ls := ix.sets
	if ls == nil {
		return podByPod
	}
	matched, ok := ls.matched[sel.Text]
	if !ok {
		if ls.budget < len(ls.labels) {
			return podByPod
		}
		ls.budget -= len(ls.labels)
		matched = make([]uint8, len(ls.labels))
		ls.matched[sel.Text] = matched
	}
	return func(id int32) bool {
		set := ls.of[id]
		if set == hostNetworkSet {
			return false
		}
		if matched[set] == 0 {
			matched[set] = matchNo
			if sel.Matches(ls.labels[set]) {
				matched[set] = matchYes
			}
		}
		return matched[set] == matchYes
	}
}

// nsAtom returns the atom of a namespace label selector, resolving it the
// first time it is seen.
func (ix *index) nsAtom(sel policy.Selector) int32 {
	if id, ok := ix.nsAtomIDs[sel.Text]; ok {
		return id
	}
	ix.own()
	id := int32(len(ix.nsAtoms))
	ix.nsAtomIDs[sel.Text] = id
	var members []int32
	if cands, narrowed := ix.nsLabels.candidates(sel.Selector, len(ix.c.Namespaces)); narrowed {
		for _, n := range cands {
			if sel.Matches(ix.c.Namespaces[n].Labels) {
				members = append(members, n)
			}
		}
	} else {
		for n, ns := range ix.c.Namespaces {
			if sel.Matches(ns.Labels) {
				members = append(members, int32(n))
			}
		}
	}
	for _, n := range members {
		ix.nsMember[n] = append(ix.nsMember[n], id)
	}
	ix.nsAtoms = append(ix.nsAtoms, nsAtom{sel: sel, members: members})
	return id
}

// podAtom returns the atom of a pod selector within a namespace scope,
// resolving it the first time it is seen unless the index is lazy.
func (ix *index) podAtom(sc scope, sel policy.Selector) int32 {
	key := podAtomKey{sc.kind, sc.name, sc.atom, sel.Text}
	if id, ok := ix.podAtomIDs[key]; ok {
		return id
	}
	ix.own()
	id := int32(len(ix.podAtoms))
	ix.podAtomIDs[key] = id
	ix.podAtoms = append(ix.podAtoms, podAtom{scope: sc, sel: sel})
	if !ix.lazy {
		ix.resolve(id)
	}
	return id
}

// resolve finds the members of pod atom id.
func (ix *index) resolve(id int32) {
	a := &ix.podAtoms[id]
	a.members = ix.resolvePods(a.scope, a.sel)
	for _, p := range a.members {
		ix.podMember[p] = append(ix.podMember[p], id)
	}
}

// resolveAll resolves the atoms of a lazy index, which is then as an index
// that was not lazy.
func (ix *index) resolveAll() {
	if ix.podLabels == nil {
		ix.indexPods()
	}
	for id := range ix.podAtoms {
		ix.resolve(int32(id))
	}
	ix.lazy = false
}

// firstCommon returns the first pod, by ID, that is a member of both pod
// atoms, from their selectors: PriorityOverlaps asks it about the subjects
// of admin policies of equal priority and needs no more of their members.
// It walks the narrower scope in the order of IDs, a namespace at a time.
func (ix *index) firstCommon(a, b int32) (int32, bool) {
	A, B := &ix.podAtoms[a], &ix.podAtoms[b]
	if narrower(B.scope, A.scope) {
		A, B = B, A
	}
	if ix.sets == nil {
		ix.sets = newLabelSets(ix.c.Pods)
	}
	inA, inB := ix.matcher(A.sel), ix.matcher(B.sel)
	for n := range ix.namespacesIn(A.scope) {
		if !ix.nsInScope(B.scope, n) {
			continue
		}
		for _, p := range ix.c.PodsIn(ix.c.Namespaces[n]) {
			if inA(p.ID) && inB(p.ID) {
				return p.ID, true
			}
		}
	}
	return 0, false
}

// narrower reports whether scope a holds fewer namespaces than b can:
// one namespace, then a namespace atom, then all.
func narrower(a, b scope) bool {
	rank := func(s scope) int {
		switch s.kind {
		case scopeName:
			return 0
		case scopeAtom:
			return 1
		}
		return 2
	}
	return rank(a) < rank(b)
}

// atomHas reports whether pod p is a member of pod atom a, from its
// selectors: what resolving the atom says of p, without resolving it.
func (ix *index) atomHas(a int32, p *state.Pod) bool {
	atom := &ix.podAtoms[a]
	return !p.HostNetwork && ix.inScope(atom.scope, p) && atom.sel.Matches(p.Labels)
}

// scanFirst is how many pods in scope are looked at one by one rather than
// through the label index: a pod costs a table look-up (labelSets), the
// index a few map look-ups per requirement and value.
const scanFirst = 64

func (ix *index) resolvePods(sc scope, sel policy.Selector) []int32 {
	var members []int32
	matches := ix.matcher(sel)
	podsInScope := len(ix.c.Pods)
	if sc.kind != scopeAny {
		podsInScope = 0
		for n := range ix.namespacesIn(sc) {
			podsInScope += len(ix.c.PodsIn(ix.c.Namespaces[n]))
		}
	}
	if podsInScope > scanFirst {
		if cands, narrowed := ix.podLabels.candidates(sel.Selector, podsInScope); narrowed {
			for _, id := range cands {
				if ix.inScope(sc, ix.c.Pods[id]) && matches(id) {
					members = append(members, id)
				}
			}
			return members
		}
	}
	// pods are a run of IDs: Cluster.Pods and a namespace's part of it.
	scan := func(pods []*state.Pod) {
		if len(pods) == 0 {
			return
		}
		for id, end := pods[0].ID, pods[0].ID+int32(len(pods)); id < end; id++ {
			if matches(id) {
				members = append(members, id)
			}
		}
	}
	if sc.kind == scopeAny {
		scan(ix.c.Pods)
		return members
	}
	for n := range ix.namespacesIn(sc) {
		scan(ix.c.PodsIn(ix.c.Namespaces[n]))
	}
	slices.Sort(members)
	return members
}

// namespacesIn yields the namespaces of a scope, by index, ascending.
func (ix *index) namespacesIn(sc scope) iter.Seq[int32] {
	return func(yield func(int32) bool) {
		switch sc.kind {
		case scopeAny:
			for n := range ix.c.Namespaces {
				if !yield(int32(n)) {
					return
				}
			}
		case scopeName:
			if ns := ix.c.Namespace(sc.name); ns != nil {
				yield(ix.nsIDs[ns])
			}
		case scopeAtom:
			for _, n := range ix.nsAtoms[sc.atom].members {
				if !yield(n) {
					return
				}
			}
		}
	}
}

// nsInScope reports whether the namespace of index n is in scope sc.
func (ix *index) nsInScope(sc scope, n int32) bool {
	switch sc.kind {
	case scopeName:
		return ix.c.Namespaces[n].Name == sc.name
	case scopeAtom:
		return ix.nsHas(n, sc.atom)
	}
	return true
}

func (ix *index) inScope(sc scope, p *state.Pod) bool {
	switch sc.kind {
	case scopeName:
		return p.Namespace.Name == sc.name
	case scopeAtom:
		return ix.nsHas(ix.nsIDs[p.Namespace], sc.atom)
	}
	return true
}

func (ix *index) nsHas(ns int32, atom int32) bool { return has(ix.nsMember[ns], atom) }

func (ix *index) podHas(pod int32, atom int32) bool { return has(ix.podMember[pod], atom) }

// has reports whether sorted list holds v.
func has(list []int32, v int32) bool {
	i := sort.Search(len(list), func(i int) bool { return list[i] >= v })
	return i < len(list) && list[i] == v
}

// atomOf compiles a PodSelector into a pod atom. Relative namespace
// selections cannot be resolved without the subject pod: their atom spans
// every namespace and the namespace is checked per flow.
func (ix *index) atomOf(ps policy.PodSelector) int32 {
	switch ps.Namespaces.Match {
	case policy.NamespaceName:
		return ix.podAtom(scope{kind: scopeName, name: ps.Namespaces.Name}, ps.Pods)
	case policy.NamespaceLabels:
		return ix.podAtom(scope{kind: scopeAtom, atom: ix.nsAtom(ps.Namespaces.Selector)}, ps.Pods)
	}
	return ix.podAtom(scope{kind: scopeAny}, ps.Pods)
}
