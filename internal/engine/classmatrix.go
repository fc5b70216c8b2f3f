package engine

import (
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// ClassMatrix is the verdicts among one set of pods, as sources and as
// destinations, held as behaviour classes rather than pods: Matrix's work
// without its pods x pods table, which at a few thousand pods no longer fits
// in memory. A front end asks for one source class at a time (Row) and
// writes a matrix of any size, per pod or per group of pods, while it
// computes.
type ClassMatrix struct {
	Pods  []*state.Pod
	Ports []l4.Port
	// Class[i] is the class of Pods[i], numbered from 0 in order of first
	// appearance; a class is the same as a source and as a destination.
	Class []int
	reps  [][2]*state.Pod
	e     *Engine
}

// ClassMatrix classes pods; it decides nothing until Row is asked.
func (e *Engine) ClassMatrix(pods []*state.Pod, ports []l4.Port) *ClassMatrix {
	withNodes := false
	for _, p := range pods {
		withNodes = withNodes || p.HostNetwork
	}
	class, reps := e.classes(pods, withNodes)
	return &ClassMatrix{Pods: pods, Ports: ports, Class: class, reps: reps, e: e}
}

// Classes is the number of classes.
func (m *ClassMatrix) Classes() int { return len(m.reps) }

// Paired reports whether class c towards class d holds a pair of distinct
// pods: only a class of one pod towards itself does not, and its verdict
// is no verdict (a pod always reaches itself).
func (m *ClassMatrix) Paired(c, d int) bool { return c != d || m.reps[c][1] != nil }

// Row decides class c towards every class on every port:
// row[d*len(Ports)+k] is the verdict towards class d on Ports[k] (false
// where !Paired(c, d)). row must hold Classes()*len(Ports) cells.
func (m *ClassMatrix) Row(c int, row []bool) {
	n := len(m.Ports)
	for d, dr := range m.reps {
		m.e.decideClasses(m.reps[c], dr, m.Ports, row[d*n:(d+1)*n])
	}
}
