package engine

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/netpol/netpol/internal/state"
)

// lazy is what NewLazy leaves for later: the members of the pod atoms
// and the lists of applicable policies. Until they are made (finish),
// the engine answers from the selectors: a pod's policies are those whose
// subject selector matches it, and a pod peer matches by its selector.
type lazy struct {
	once sync.Once
	done atomic.Bool // finish has run: the engine is as New makes it

	// subjects are the pod atoms that are some policy's subject: those
	// of one namespace, by its name, and the others.
	inNamespace map[string][]int32
	others      []int32

	// mu guards the index's label sets, which firstCommon and finish
	// fill.
	mu sync.Mutex
}

func newLazy(e *Engine) *lazy {
	l := &lazy{inNamespace: map[string][]int32{}}
	for a, ps := range e.bySubject {
		if !slices.ContainsFunc(ps[:], func(tier []*compiled) bool { return len(tier) > 0 }) {
			continue // a subject of no policy in any tier
		}
		if sc := e.ix.podAtoms[a].scope; sc.kind == scopeName {
			l.inNamespace[sc.name] = append(l.inNamespace[sc.name], int32(a))
		} else {
			l.others = append(l.others, int32(a))
		}
	}
	return l
}

// resolved reports whether nothing is left for later.
func (e *Engine) resolved() bool { return e.lazy == nil || e.lazy.done.Load() }

// finish makes what NewLazy left for later, once.
func (e *Engine) finish() {
	if e.resolved() {
		return
	}
	e.lazy.once.Do(func() {
		e.lazy.mu.Lock()
		defer e.lazy.mu.Unlock()
		e.ix.resolveAll()
		e.indexApplicable()
		e.lazy.done.Store(true)
	})
}

// members returns the members of pod atom a, resolving them all first if
// NewLazy left them.
func (e *Engine) members(a int32) []int32 {
	e.finish()
	return e.ix.podAtoms[a].members
}

// atomsOf returns the pod atoms pod is a member of, resolving them all
// first if NewLazy left them.
func (e *Engine) atomsOf(pod int32) []int32 {
	e.finish()
	return e.ix.podMember[pod]
}

// podHas reports whether pod is a member of pod atom a.
func (e *Engine) podHas(pod *state.Pod, a int32) bool {
	if !e.resolved() {
		return e.ix.atomHas(a, pod)
	}
	return e.ix.podHas(pod.ID, a)
}

// firstCommon returns the first pod, by ID, that is a member of both pod
// atoms; from their selectors when NewLazy left the members for later.
func (e *Engine) firstCommon(a, b int32) (int32, bool) {
	if !e.resolved() {
		e.lazy.mu.Lock()
		defer e.lazy.mu.Unlock()
		if !e.lazy.done.Load() {
			return e.ix.firstCommon(a, b)
		}
	}
	return firstCommon(e.ix.podAtoms[a].members, e.ix.podAtoms[b].members)
}

// applicable is Engine.applicable before finish: the policies whose
// subject selects pod, found by matching pod against the subjects that
// can, per tier in evaluation order.
func (l *lazy) applicable(e *Engine, pod *state.Pod) tierLists {
	var out tierLists
	for _, atoms := range [][]int32{l.inNamespace[pod.Namespace.Name], l.others} {
		for _, a := range atoms {
			if e.ix.atomHas(a, pod) {
				for t, ps := range e.bySubject[a] {
					out[t] = append(out[t], ps...)
				}
			}
		}
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b *compiled) int { return a.rank - b.rank })
	}
	return out
}
