package graph

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Colours of the edge states, shared by DOT and SVG. Removed edges are also
// dashed and changed ones carry +/- in their labels, so the picture reads
// without colour.
var stateColour = [...]string{Same: "#57606a", Added: "#1a7f37", Removed: "#cf222e", Changed: "#9a6700"}

// WriteDOT writes g in the Graphviz DOT language: one cluster subgraph per
// namespace, one box per node, labelled edges (added green, removed red and
// dashed, changed amber). Render it with `dot -Tpng`, or use WriteSVG, which needs no
// Graphviz.
func WriteDOT(w io.Writer, g *Graph) error {
	if err := g.check(); err != nil {
		return err
	}
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "digraph %s {\n", dotQuote(g.Title))
	fmt.Fprintf(b, "  graph [label=%s, labelloc=t, fontname=\"Helvetica\", rankdir=LR];\n", dotQuote(g.Title))
	b.WriteString("  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=10];\n")
	for ci, c := range g.clusters() {
		fmt.Fprintf(b, "  subgraph cluster_%d {\n    label=%s;\n", ci, dotQuote(c.name))
		for _, i := range c.nodes {
			fmt.Fprintf(b, "    n%d [label=%s];\n", i, dotQuote(strings.Join(g.Nodes[i].lines(), "\n")))
		}
		b.WriteString("  }\n")
	}
	for _, e := range g.drawnEdges() {
		attrs := "label=" + dotQuote(e.Label)
		if e.both {
			attrs += ", dir=both"
		}
		if e.State != Same {
			c := dotQuote(stateColour[e.State])
			attrs += ", color=" + c + ", fontcolor=" + c
		}
		if e.State == Removed {
			attrs += ", style=dashed"
		}
		fmt.Fprintf(b, "  n%d -> n%d [%s];\n", e.From, e.To, attrs)
	}
	b.WriteString("}\n")
	return b.Flush()
}

// dotQuote makes s a DOT double-quoted string; newlines become \n, which
// Graphviz draws as centred line breaks.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
