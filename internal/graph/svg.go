package graph

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Layout measures, in pixels. Text is monospace so its width is known
// without a font: charWidth per character at fontSize.
const (
	fontSize       = 12
	charWidth      = 7.2
	labelCharWidth = 6.6 // at the edge labels' 11px
	lineHeight     = 15
	nodePadX       = 10
	nodePadY       = 6
	nodeMinWidth   = 90
	nodeGap        = 16
	clusterPad     = 14
	clusterTitle   = 24
	gapX           = 150 // between namespace boxes: room for edges and labels
	gapY           = 100
	margin         = 24
	headerHeight   = 56
	maxLabel       = 40 // edge label characters drawn; the tooltip has all
)

const font = `font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"`

type point struct{ x, y float64 }

type rect struct{ x, y, w, h float64 }

func (r rect) centre() point { return point{r.x + r.w/2, r.y + r.h/2} }

// border is where the ray from r's centre towards p leaves r.
func (r rect) border(p point) point {
	c := r.centre()
	dx, dy := p.x-c.x, p.y-c.y
	t := math.Inf(1)
	if dx != 0 {
		t = math.Min(t, r.w/2/math.Abs(dx))
	}
	if dy != 0 {
		t = math.Min(t, r.h/2/math.Abs(dy))
	}
	if t >= 1 { // p is inside r
		return p
	}
	return point{c.x + dx*t, c.y + dy*t}
}

// layout places namespaces as boxes on a grid, with each namespace's nodes
// stacked inside its box. The busiest namespaces (most edge ends) take the
// cells nearest the centre, so the many edges of hubs such as monitoring or
// DNS stay short and rarely cross another box.
type layout struct {
	clusters      []cluster
	boxes         []rect // per cluster
	nodes         []rect // per node
	width, height float64
}

func place(g *Graph, top float64) layout {
	l := layout{clusters: g.clusters(), nodes: make([]rect, len(g.Nodes))}
	n := len(l.clusters)
	cols := int(math.Ceil(math.Sqrt(float64(n))))
	if cols == 0 {
		cols = 1
	}
	rows := (n + cols - 1) / cols
	// Measure each box, then the grid's column widths and row heights.
	l.boxes = make([]rect, n)
	for ci, c := range l.clusters {
		w := textWidth(c.name) + 2*clusterPad
		h := float64(clusterTitle + clusterPad)
		for k, i := range c.nodes {
			nw, nh := nodeSize(g.Nodes[i])
			w = math.Max(w, nw+2*clusterPad)
			if k > 0 {
				h += nodeGap
			}
			h += nh
		}
		l.boxes[ci] = rect{w: w, h: h + clusterPad}
	}
	cell := cells(g, l.clusters, rows, cols)
	colW, rowH := make([]float64, cols), make([]float64, rows)
	for ci, b := range l.boxes {
		r, c := cell[ci][0], cell[ci][1]
		colW[c] = math.Max(colW[c], b.w)
		rowH[r] = math.Max(rowH[r], b.h)
	}
	colX, rowY := make([]float64, cols), make([]float64, rows)
	x := float64(margin)
	for c := range colW {
		colX[c] = x
		x += colW[c] + gapX
	}
	y := top
	for r := range rowH {
		rowY[r] = y
		y += rowH[r] + gapY
	}
	l.width = x - gapX + margin
	l.height = y - gapY + margin
	if n == 0 {
		l.width, l.height = 2*margin, top+margin
	}
	// Place boxes, centred in their cell, and the nodes in them.
	for ci, c := range l.clusters {
		b := &l.boxes[ci]
		r, col := cell[ci][0], cell[ci][1]
		b.x = colX[col] + (colW[col]-b.w)/2
		b.y = rowY[r]
		y := b.y + clusterTitle
		for _, i := range c.nodes {
			_, nh := nodeSize(g.Nodes[i])
			l.nodes[i] = rect{x: b.x + clusterPad, y: y, w: b.w - 2*clusterPad, h: nh}
			y += nh + nodeGap
		}
	}
	return l
}

// cells assigns each cluster a grid cell (row, column): clusters by edge
// ends, most first, then name; cells by distance from the centre, then
// row and column.
func cells(g *Graph, clusters []cluster, rows, cols int) [][2]int {
	of := make([]int, len(g.Nodes)) // node -> cluster
	for ci, c := range clusters {
		for _, i := range c.nodes {
			of[i] = ci
		}
	}
	degree := make([]int, len(clusters))
	for _, e := range g.Edges {
		if of[e.From] != of[e.To] {
			degree[of[e.From]]++
			degree[of[e.To]]++
		}
	}
	order := make([]int, len(clusters))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return degree[order[a]] > degree[order[b]] })
	var grid [][2]int
	for r := range rows {
		for c := range cols {
			grid = append(grid, [2]int{r, c})
		}
	}
	mr, mc := float64(rows-1)/2, float64(cols-1)/2
	dist := func(p [2]int) float64 { return math.Pow(float64(p[0])-mr, 2) + math.Pow(float64(p[1])-mc, 2) }
	sort.SliceStable(grid, func(a, b int) bool { return dist(grid[a]) < dist(grid[b]) })
	out := make([][2]int, len(clusters))
	for k, ci := range order {
		out[ci] = grid[k]
	}
	return out
}

func nodeSize(n Node) (w, h float64) {
	w = nodeMinWidth
	lines := n.lines()
	for _, s := range lines {
		w = math.Max(w, textWidth(s)+2*nodePadX)
	}
	return w, float64(max(len(lines), 1)*lineHeight + 2*nodePadY)
}

func textWidth(s string) float64 { return float64(len([]rune(s))) * charWidth }

// WriteSVG renders g as a standalone SVG image: namespaces as boxes on a
// grid, nodes inside them, edges as curves with arrowheads and port labels,
// a legend for the edge states. Graphs beyond MaxNodes or MaxEdges are cut
// to those limits, with a note in the picture.
func WriteSVG(w io.Writer, g *Graph) error {
	if err := g.check(); err != nil {
		return err
	}
	g, note := g.Limit(MaxNodes, MaxEdges)
	top := float64(headerHeight)
	if note != "" {
		top += lineHeight
	}
	l := place(g, top)
	// The body is drawn first so the canvas can be sized to everything in
	// it: loops and labels may reach past the grid.
	var body strings.Builder
	ext := extent{minX: 0, maxX: l.width, maxY: l.height}
	ext.add(float64(margin)+textWidth(g.Title)*14/fontSize, 0)
	ext.add(float64(margin)+textWidth(note), 0)
	fmt.Fprintf(&body, `<text x="%d" y="%d" font-size="14" font-weight="bold" fill="#1f2328">%s</text>`+"\n", margin, margin, esc(g.Title))
	ext.add(writeLegend(&body, g, margin+22), 0)
	if note != "" {
		fmt.Fprintf(&body, `<text x="%d" y="%s" font-style="italic" fill="#9a6700">%s</text>`+"\n", margin, num(top-10), esc(note))
	}
	for ci, c := range l.clusters {
		r := l.boxes[ci]
		fmt.Fprintf(&body, `<g class="namespace"><title>namespace %s</title><rect x="%s" y="%s" width="%s" height="%s" rx="8" fill="#f6f8fa" stroke="#d0d7de"/>`,
			esc(c.name), num(r.x), num(r.y), num(r.w), num(r.h))
		fmt.Fprintf(&body, `<text x="%s" y="%s" font-weight="bold" fill="#1f2328">%s</text></g>`+"\n",
			num(r.x+clusterPad), num(r.y+17), esc(c.name))
	}
	labels := writeEdges(&body, g, l, &ext)
	for i, n := range g.Nodes {
		r := l.nodes[i]
		fmt.Fprintf(&body, `<g class="node" id="n%d"><title>%s: %s</title><rect x="%s" y="%s" width="%s" height="%s" rx="5" fill="#ffffff" stroke="#1f2328"/>`,
			i, esc(n.Namespace), esc(strings.Join(n.Pods, ", ")), num(r.x), num(r.y), num(r.w), num(r.h))
		for k, line := range n.lines() {
			fmt.Fprintf(&body, `<text x="%s" y="%s" text-anchor="middle" fill="#1f2328">%s</text>`,
				num(r.x+r.w/2), num(r.y+nodePadY+float64(k+1)*lineHeight-4), esc(line))
		}
		body.WriteString("</g>\n")
	}
	body.WriteString(labels) // last, over every line

	x0 := math.Min(ext.minX-margin/2, 0)
	width, height := ext.maxX+margin/2-x0, ext.maxY+margin/2
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="%s 0 %s %s" %s font-size="%d">`+"\n",
		num(width), num(height), num(x0), num(width), num(height), font, fontSize)
	fmt.Fprintf(b, "<title>%s</title>\n<defs>\n", esc(g.Title))
	for _, s := range states {
		fmt.Fprintf(b, `<marker id="arrow-%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`+"\n",
			s, stateColour[s])
		fmt.Fprintf(b, `<marker id="arrow-%s-start" viewBox="0 0 10 10" refX="1" refY="5" markerWidth="8" markerHeight="8" orient="auto"><path d="M10,0 L0,5 L10,10 z" fill="%s"/></marker>`+"\n",
			s, stateColour[s])
	}
	b.WriteString("</defs>\n")
	fmt.Fprintf(b, `<rect x="%s" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", num(x0), num(width), num(height))
	b.WriteString(body.String())
	b.WriteString("</svg>\n")
	return b.Flush()
}

// extent is how far the drawing reaches.
type extent struct{ minX, maxX, maxY float64 }

func (e *extent) add(x, y float64) {
	e.minX, e.maxX, e.maxY = math.Min(e.minX, x), math.Max(e.maxX, x), math.Max(e.maxY, y)
}

// writeLegend explains the edge states the graph uses and returns where
// it ends on the right.
func writeLegend(b *strings.Builder, g *Graph, y int) float64 {
	used := map[State]bool{}
	for _, e := range g.Edges {
		used[e.State] = true
	}
	words := map[State]string{Same: "allowed", Added: "added (allowed in NEW only)", Removed: "removed (allowed in OLD only)",
		Changed: "changed (+ ports gained, - lost)"}
	if len(used) == 1 && used[Same] {
		words[Same] = "allowed, on the ports shown"
	}
	x := float64(margin)
	for _, s := range states {
		if !used[s] {
			continue
		}
		fmt.Fprintf(b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-width="1.5"%s marker-end="url(#arrow-%s)"/>`,
			num(x), y-4, num(x+28), y-4, stateColour[s], dash(s), s)
		fmt.Fprintf(b, `<text x="%s" y="%d" fill="#57606a">%s</text>`+"\n", num(x+34), y, esc(words[s]))
		x += 34 + textWidth(words[s]) + 24
	}
	return x - 24
}

func dash(s State) string {
	if s == Removed {
		return ` stroke-dasharray="6 4"`
	}
	return ""
}

// writeEdges draws every edge as a quadratic curve bent to its left, so
// the two directions between a pair of nodes take different paths; further
// parallel edges bend further. It returns the labels, to be drawn on top,
// each placed where the curve is free of the labels before it.
func writeEdges(b *strings.Builder, g *Graph, l layout, ext *extent) string {
	var labels strings.Builder
	var placed []rect
	parallel := map[[2]int]int{}
	for i, e := range g.drawnEdges() {
		k := parallel[[2]int{e.From, e.To}]
		parallel[[2]int{e.From, e.To}]++
		label := e.Label
		if r := []rune(label); len(r) > maxLabel {
			label = string(r[:maxLabel-1]) + "…"
		}
		lw := float64(len([]rune(label)))*labelCharWidth + 4
		var path string
		var plate rect // the label's white plate; text sits on its baseline
		from, to := l.nodes[e.From], l.nodes[e.To]
		if e.From == e.To {
			// A loop on the node's right side: pods of the class reach each other.
			x, cy := from.x+from.w, from.y+from.h/2
			reach := 36 + 16*float64(k)
			path = fmt.Sprintf("M%s,%s C%s,%s %s,%s %s,%s", num(x), num(cy-5), num(x+reach), num(cy-24), num(x+reach), num(cy+24), num(x), num(cy+5))
			plate = rect{x: x + reach*0.75 + 2, y: cy - 7, w: lw, h: 14}
		} else {
			p0, p2 := from.centre(), to.centre()
			dx, dy := p2.x-p0.x, p2.y-p0.y
			length := math.Hypot(dx, dy)
			bend := math.Min(math.Max(length*0.15, 24), 70) * (1 + 0.9*float64(k))
			c := point{(p0.x+p2.x)/2 + dy/length*bend, (p0.y+p2.y)/2 - dx/length*bend}
			s, t := from.border(c), to.border(c)
			path = fmt.Sprintf("M%s,%s Q%s,%s %s,%s", num(s.x), num(s.y), num(c.x), num(c.y), num(t.x), num(t.y))
			for n, u := range []float64{0.5, 0.38, 0.62, 0.28, 0.72} {
				a, m, z := (1-u)*(1-u), 2*(1-u)*u, u*u
				at := point{a*s.x + m*c.x + z*t.x, a*s.y + m*c.y + z*t.y}
				try := rect{x: at.x - lw/2, y: at.y - 7, w: lw, h: 14}
				if n == 0 || !overlaps(try, placed) {
					plate = try
				}
				if !overlaps(try, placed) {
					break
				}
			}
		}
		placed = append(placed, plate)
		ext.add(plate.x, plate.y+plate.h)
		ext.add(plate.x+plate.w, plate.y+plate.h)
		arrow, start := " -> ", ""
		if e.both {
			arrow, start = " <-> ", fmt.Sprintf(` marker-start="url(#arrow-%s-start)"`, e.State)
		}
		title := g.Nodes[e.From].Name() + arrow + g.Nodes[e.To].Name() + ": " + e.Label
		if e.State != Same {
			title = e.State.String() + " " + title
		}
		colour := stateColour[e.State]
		fmt.Fprintf(b, `<g class="edge %s" id="e%d"><title>%s</title><path d="%s" fill="none" stroke="%s" stroke-width="1.5"%s%s marker-end="url(#arrow-%s)"/></g>`+"\n",
			e.State, i, esc(title), path, colour, dash(e.State), start, e.State)
		// A white plate under the label hides the lines it sits on.
		fmt.Fprintf(&labels, `<rect x="%s" y="%s" width="%s" height="14" rx="3" fill="#ffffff" fill-opacity="0.9"/>`, num(plate.x), num(plate.y), num(plate.w))
		fmt.Fprintf(&labels, `<text x="%s" y="%s" text-anchor="middle" font-size="11" fill="%s">%s</text>`+"\n",
			num(plate.x+plate.w/2), num(plate.y+11), colour, esc(label))
	}
	return labels.String()
}

func overlaps(r rect, others []rect) bool {
	for _, o := range others {
		if r.x < o.x+o.w && o.x < r.x+r.w && r.y < o.y+o.h && o.y < r.y+r.h {
			return true
		}
	}
	return false
}

// num prints a coordinate with one decimal at most, the same on every run.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
