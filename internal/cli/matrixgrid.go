package cli

import (
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// The matrix is written while it is computed: a format asks for the cells
// of one row at a time (grid.row), made from the verdicts of behaviour
// classes (classRows), so that memory follows the number of classes, not
// the size of the output.

// cell is the verdict of a row towards a column on one port. Over groups
// of pods (--by workload) the pairs of their pods may disagree; the bits
// say which verdicts were seen, so that mixed is both.
type cell uint8

const (
	cellAllowed cell = 1
	cellDenied  cell = 2
	cellMixed        = cellAllowed | cellDenied
)

// unit is a row and a column of the matrix: one pod, or every pod of one
// workload (--by workload).
type unit struct {
	ns   string
	name string // the pod's name, or the workload's kind/name: deployment/web
	pods []int  // indexes of its pods in the matrix's pods
}

func (u unit) key() string { return u.ns + "/" + u.name }

// podUnits makes one unit per pod.
func podUnits(pods []*state.Pod) []unit {
	out := make([]unit, len(pods))
	for i, p := range pods {
		out[i] = unit{ns: p.Namespace.Name, name: p.Name, pods: []int{i}}
	}
	return out
}

// workloadUnits makes one unit per workload, ordered by namespace and
// kind/name: pods made by the same controller share it, a bare pod is its
// own.
func workloadUnits(pods []*state.Pod) []unit {
	index := map[string]int{}
	var out []unit
	for i, p := range pods {
		u := unit{ns: p.Namespace.Name, name: workloadName(p)}
		id, ok := index[u.key()]
		if !ok {
			id = len(out)
			index[u.key()] = id
			out = append(out, u)
		}
		out[id].pods = append(out[id].pods, i)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].ns != out[j].ns {
			return out[i].ns < out[j].ns
		}
		return out[i].name < out[j].name
	})
	return out
}

// workloadName is kind/name of the workload that made p, as kubectl spells
// a resource (deployment/web), or pod/NAME for a bare pod.
func workloadName(p *state.Pod) string {
	kind, name := p.Controller()
	if kind == "" {
		return "pod/" + name
	}
	return strings.ToLower(kind) + "/" + name
}

// layer is the verdicts of one engine over the grid: the enforced
// policies, or with --staged the staged ones too. Each engine classes the
// pods its own way, so each layer knows the classes of every unit's pods.
type layer struct {
	rows    *classRows
	classes [][]classCount // per unit, its pods' classes in rows
}

type classCount struct{ class, pods int }

func newLayer(cm *engine.ClassMatrix, units []unit) *layer {
	l := &layer{rows: newClassRows(cm), classes: make([][]classCount, len(units))}
	for u, x := range units {
		var cs []classCount
		for _, i := range x.pods {
			c := cm.Class[i]
			j := slices.IndexFunc(cs, func(cc classCount) bool { return cc.class == c })
			if j < 0 {
				j = len(cs)
				cs = append(cs, classCount{class: c})
			}
			cs[j].pods++
		}
		l.classes[u] = cs
	}
	return l
}

// grid is the matrix over units: the enforced verdicts and, with
// --staged, the staged ones.
type grid struct {
	units            []unit
	ports            []l4.Range // the port dimension; each range is decided on its first port
	enforced, staged *layer     // staged is nil without --staged
	pods             int
	byWorkload       bool
}

// classRows are the class rows of the grid's layers, for portGroups.
func (g *grid) classRows() []*classRows {
	out := []*classRows{g.enforced.rows}
	if g.staged != nil {
		out = append(out, g.staged.rows)
	}
	return out
}

// row fills out[v*len(ports)+k] with the verdict of units[u] towards
// units[v] on ports[k] in layer l. A pod towards itself is allowed; a
// workload towards itself is the verdict between its distinct pods.
func (g *grid) row(l *layer, u int, out []cell) {
	n := len(g.ports)
	clear(out)
	for _, a := range l.classes[u] {
		row := l.rows.get(a.class)
		for v := range g.units {
			cells := out[v*n : (v+1)*n]
			for _, b := range l.classes[v] {
				if v == u && a.class == b.class && a.pods == 1 {
					continue // the only pair is the pod with itself
				}
				base := b.class * n
				for k := range cells {
					if row.has(base + k) {
						cells[k] |= cellAllowed
					} else {
						cells[k] |= cellDenied
					}
				}
			}
		}
	}
	if len(g.units[u].pods) == 1 {
		for k := u * n; k < (u+1)*n; k++ {
			out[k] = cellAllowed // a pod can always reach itself
		}
	}
}

// rowCells holds one row of the grid, enforced and (with --staged) staged,
// for the formats that write a row at a time.
type rowCells struct {
	g           *grid
	now, staged []cell
}

func (g *grid) rowCells() *rowCells {
	r := &rowCells{g: g, now: make([]cell, len(g.units)*len(g.ports))}
	if g.staged != nil {
		r.staged = make([]cell, len(r.now))
	}
	return r
}

// load decides the row of units[u].
func (r *rowCells) load(u int) {
	r.g.row(r.g.enforced, u, r.now)
	if r.staged != nil {
		r.g.row(r.g.staged, u, r.staged)
	}
}

// at returns the cell towards units[v] on ports[k], and its staged
// verdict (0 without --staged).
func (r *rowCells) at(v, k int) (now, staged cell) {
	i := v*len(r.g.ports) + k
	if r.staged != nil {
		staged = r.staged[i]
	}
	return r.now[i], staged
}

// bits is a row of class verdicts, one bit per destination class and port.
type bits []uint64

func (b bits) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// classRows decides the rows of a ClassMatrix on demand and keeps them
// while they fit in a budget: a matrix of 2,000 pods in 700 classes on 15
// ports holds 1 MB of them, and every format reads each row many times.
// Past the budget it forgets them all and decides again: output becomes
// slower, never bigger in memory.
type classRows struct {
	cm      *engine.ClassMatrix
	rows    []bits
	held    int // bytes in rows
	budget  int
	scratch []bool
	decided atomic.Int64 // rows decided, for the progress line
}

// classRowBudget bounds the class verdicts held; beyond it (tens of
// thousands of classes) rows are decided again when asked again.
const classRowBudget = 64 << 20

func newClassRows(cm *engine.ClassMatrix) *classRows {
	return &classRows{cm: cm, rows: make([]bits, cm.Classes()), budget: classRowBudget,
		scratch: make([]bool, cm.Classes()*len(cm.Ports))}
}

// get returns the row of class c; it stays valid after later calls.
func (r *classRows) get(c int) bits {
	if row := r.rows[c]; row != nil {
		return row
	}
	row := r.decide(c, nil)
	if r.held+8*len(row) > r.budget {
		clear(r.rows)
		r.held = 0
	}
	r.rows[c] = row
	r.held += 8 * len(row)
	return row
}

// once returns the row of class c for a reader that reads each row once
// (the class view): a row held already, or one decided into *buf, the
// reader's, and not held.
func (r *classRows) once(c int, buf *bits) bits {
	if row := r.rows[c]; row != nil {
		return row
	}
	*buf = r.decide(c, *buf)
	return *buf
}

// decide decides the row of class c into buf (made when too short).
func (r *classRows) decide(c int, buf bits) bits {
	r.cm.Row(c, r.scratch)
	r.decided.Add(1)
	n := (len(r.scratch) + 63) / 64
	if cap(buf) < n {
		buf = make(bits, n)
	}
	row := buf[:n]
	clear(row)
	for i, ok := range r.scratch {
		if ok {
			row[i/64] |= 1 << (i % 64)
		}
	}
	return row
}

// portGroups partitions the port dimension into the ports whose tables are
// identical: no pair of classes of any of rows (nil ones skipped) tells
// them apart. Groups, and the ports in each, are in port order.
func portGroups(ports int, rows ...*classRows) [][]int {
	group := make([]int, ports) // every port in group 0
	first := []int{0}           // the first port of each group
	for _, r := range rows {
		if r == nil {
			continue
		}
		classes := r.cm.Classes()
		for c := 0; c < classes && len(first) < ports; c++ {
			row := r.get(c)
			for d := 0; d < classes && len(first) < ports; d++ {
				base := d * ports
				if !r.cm.Paired(c, d) || !splits(row, base, group, first) {
					continue
				}
				// Split each group by this pair's verdicts, numbering the
				// groups again in order of their first port.
				ids := map[[2]int]int{}
				first = first[:0]
				for k := range ports {
					key := [2]int{group[k], 0}
					if row.has(base + k) {
						key[1] = 1
					}
					id, ok := ids[key]
					if !ok {
						id = len(first)
						ids[key] = id
						first = append(first, k)
					}
					group[k] = id
				}
			}
		}
	}
	out := make([][]int, len(first))
	for k, g := range group {
		out[g] = append(out[g], k)
	}
	return out
}

// splits reports whether some port's verdict at base differs from its
// group's first port's: most pairs of classes split nothing, and this
// check costs no allocation.
func splits(row bits, base int, group, first []int) bool {
	for k, g := range group {
		if row.has(base+k) != row.has(base+first[g]) {
			return true
		}
	}
	return false
}
