package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/diff"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/graph"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/words"
)

// writeSVG renders g, and says on stderr when it was too big to draw whole.
func writeSVG(cmd *cobra.Command, g *graph.Graph) error {
	if _, note := g.Limit(graph.MaxNodes, graph.MaxEdges); note != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the picture is cut: %s (-o dot has everything)\n", note)
	}
	return graph.WriteSVG(cmd.OutOrStdout(), g)
}

// matrixGraph draws the pods of a matrix: one node per behaviour class and
// namespace, an edge where a class may connect to another on some of ports.
// It decides one or two members per node, not every pod.
func matrixGraph(e *engine.Engine, pods []*state.Pod, ports []l4.Port) *graph.Graph {
	class := e.Classes(pods)
	type key struct {
		class int
		ns    string
	}
	ids := map[key]int{}
	var members [][]*state.Pod
	g := &graph.Graph{Title: fmt.Sprintf("netpol matrix: %s on %s", words.Count(len(pods), "pod"), portList(ports))}
	for i, p := range pods {
		k := key{class[i], p.Namespace.Name}
		id, ok := ids[k]
		if !ok {
			id = len(g.Nodes)
			ids[k] = id
			g.Nodes = append(g.Nodes, graph.Node{Namespace: p.Namespace.Name})
			members = append(members, nil)
		}
		g.Nodes[id].Pods = append(g.Nodes[id].Pods, p.Name)
		members[id] = append(members[id], p)
	}
	reps, pair := engine.Representatives(members)
	m := e.Matrix(reps, reps, ports)
	for a := range members {
		for b := range members {
			s, d, ok := pair(a, b)
			if !ok {
				continue
			}
			var allowed []l4.Port
			for k, p := range ports {
				if m.Allowed(s, d, k) {
					allowed = append(allowed, p)
				}
			}
			if len(allowed) == 0 {
				continue
			}
			label := portList(allowed)
			if len(allowed) == len(ports) && len(ports) > 2 {
				label = "all " + words.Count(len(ports), "port")
			}
			g.Edges = append(g.Edges, graph.Edge{From: a, To: b, Label: label})
		}
	}
	return g
}

func portList(ports []l4.Port) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// diffGraph draws the entries of a diff: one edge per entry, added,
// removed or changed.
func diffGraph(r *diff.Result) *graph.Graph {
	g := &graph.Graph{Title: "netpol diff: " + summaryLine(r)}
	ids := map[string]int{}
	node := func(ns string, pods []string) int {
		k := ns + "/" + strings.Join(pods, ",")
		id, ok := ids[k]
		if !ok {
			id = len(g.Nodes)
			ids[k] = id
			g.Nodes = append(g.Nodes, graph.Node{Namespace: ns, Pods: pods})
		}
		return id
	}
	for _, grp := range r.Groups {
		for _, e := range grp.Entries {
			edge := graph.Edge{From: node(grp.From, e.From), To: node(grp.To, e.To), Label: entryPorts(e)}
			switch e.Change {
			case diff.Gained:
				edge.State = graph.Added
			case diff.Lost:
				edge.State = graph.Removed
			default:
				edge.State, edge.Label = graph.Changed, "+"+diff.FormatPorts(e.Gained)+" -"+diff.FormatPorts(e.Lost)
			}
			g.Edges = append(g.Edges, edge)
		}
	}
	return g
}
