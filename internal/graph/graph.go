// Package graph draws pod connectivity for people: namespaces as clusters,
// classes of pods (pods that policy treats alike) as nodes, and connections
// as edges labelled with their ports, each edge unchanged, added or removed.
// It writes Graphviz DOT and renders SVG itself, so a picture needs no
// Graphviz. It is a leaf of the data flow: it imports nothing from netpol;
// the CLI fills a Graph from the engine's matrix or from a diff.
package graph

import (
	"fmt"
	"sort"
	"strings"
)

// State says how an edge compares between two versions of a cluster.
type State uint8

const (
	Same    State = iota // allowed, and unchanged (the only state of a matrix)
	Added                // allowed in the new version only
	Removed              // allowed in the old version only
	Changed              // allowed in both, on different ports
)

// states lists every state in drawing and legend order.
var states = [...]State{Same, Added, Removed, Changed}

func (s State) String() string {
	switch s {
	case Added:
		return "added"
	case Removed:
		return "removed"
	case Changed:
		return "changed"
	}
	return "same"
}

// Node is a class of pods of one namespace.
type Node struct {
	Namespace string
	Pods      []string // pod names, without the namespace
}

// Name is how a node is named in titles: "ns/pod" or "ns/{a,b,+3}".
func (n Node) Name() string {
	switch len(n.Pods) {
	case 0:
		return n.Namespace + "/"
	case 1:
		return n.Namespace + "/" + n.Pods[0]
	}
	return n.Namespace + "/{" + strings.Join(shortList(n.Pods, 3), ",") + "}"
}

// lines is the node's label, one pod per line, long classes shortened.
func (n Node) lines() []string { return shortList(n.Pods, 4) }

// shortList keeps the first max-1 names and counts the rest, so a class of
// a hundred replicas is one small box.
func shortList(names []string, max int) []string {
	if len(names) <= max {
		return names
	}
	out := append([]string(nil), names[:max-1]...)
	return append(out, fmt.Sprintf("+%d more", len(names)-(max-1)))
}

// Edge is a connection from one node to another (or to itself: pods of a
// class talking to each other).
type Edge struct {
	From, To int    // indexes into Graph.Nodes
	Label    string // the ports, e.g. "80/tcp, 5432/tcp"
	State    State
}

// Graph is what gets drawn. Writers keep the order of Nodes within a
// namespace and of Edges, and order namespaces by name, so equal graphs
// give equal bytes.
type Graph struct {
	Title string
	Nodes []Node
	Edges []Edge
}

// Limits beyond which an SVG is no longer readable; WriteSVG draws the
// first nodes and edges up to them and says what it left out.
const (
	MaxNodes = 80
	MaxEdges = 400
)

// cluster is one namespace's nodes, in drawing order.
type cluster struct {
	name  string
	nodes []int
}

// clusters groups node indexes by namespace, namespaces by name.
func (g *Graph) clusters() []cluster {
	byName := map[string]int{}
	var out []cluster
	for i, n := range g.Nodes {
		c, ok := byName[n.Namespace]
		if !ok {
			c = len(out)
			byName[n.Namespace] = c
			out = append(out, cluster{name: n.Namespace})
		}
		out[c].nodes = append(out[c].nodes, i)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Limit returns g with at most maxNodes nodes (the first in namespace
// order) and maxEdges edges among them, and a note saying what was left
// out; g itself is returned, with no note, when it fits.
func (g *Graph) Limit(maxNodes, maxEdges int) (*Graph, string) {
	if len(g.Nodes) <= maxNodes && len(g.Edges) <= maxEdges {
		return g, ""
	}
	out := &Graph{Title: g.Title}
	keep := map[int]int{} // old index -> new index
	for _, c := range g.clusters() {
		for _, i := range c.nodes {
			if len(out.Nodes) < maxNodes {
				keep[i] = len(out.Nodes)
				out.Nodes = append(out.Nodes, g.Nodes[i])
			}
		}
	}
	for _, e := range g.Edges {
		from, ok1 := keep[e.From]
		to, ok2 := keep[e.To]
		if ok1 && ok2 && len(out.Edges) < maxEdges {
			out.Edges = append(out.Edges, Edge{From: from, To: to, Label: e.Label, State: e.State})
		}
	}
	note := fmt.Sprintf("showing %d of %d nodes and %d of %d edges; narrow the input for the rest",
		len(out.Nodes), len(g.Nodes), len(out.Edges), len(g.Edges))
	return out, note
}

// drawn is an edge as drawn: an edge and its reverse with the same label
// and state become one line with two arrowheads, halving the clutter of
// pairs that talk both ways.
type drawn struct {
	Edge
	both bool
}

func (g *Graph) drawnEdges() []drawn {
	type key struct {
		from, to int
		label    string
		state    State
	}
	index := map[key]int{}
	var out []drawn
	for _, e := range g.Edges {
		if i, ok := index[key{e.To, e.From, e.Label, e.State}]; ok && e.From != e.To && !out[i].both {
			out[i].both = true
			continue
		}
		index[key{e.From, e.To, e.Label, e.State}] = len(out)
		out = append(out, drawn{Edge: e})
	}
	return out
}

// check rejects edges that point at no node, so writers can index freely.
func (g *Graph) check() error {
	for i, e := range g.Edges {
		if e.From < 0 || e.From >= len(g.Nodes) || e.To < 0 || e.To >= len(g.Nodes) {
			return fmt.Errorf("graph: edge %d (%d -> %d) names a node out of range (%d nodes)", i, e.From, e.To, len(g.Nodes))
		}
	}
	return nil
}
