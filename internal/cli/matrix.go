package cli

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/graph"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

func newMatrix() *cobra.Command {
	var in inputFlags
	var ports, output, selector string
	var namespaces []string
	cmd := &cobra.Command{
		Use:   "matrix -f MANIFESTS",
		Short: "Print which pods can reach which, on every port that matters",
		Long: `matrix decides every pair of pods on every port and prints the truth table:
rows are sources, columns destinations, '.' allowed and 'X' denied, one table
per port. The ports are those the pods declare (containers[].ports) unless
--ports names others.

The work is done over behaviour classes: pods that no selector, IP block,
named port or node tells apart are decided once, so large clusters with few
distinct behaviours stay fast.

-o dot and -o svg draw the same as a graph: namespaces as boxes, each class
of pods (within a namespace) as one node, an arrow where the class may
connect to another, labelled with the ports. SVG is rendered by netpol
itself (no Graphviz needed); DOT is for Graphviz (dot -Tpng).`,
		Example: `  netpol matrix -f examples/tenants
  netpol matrix -f examples/tenants --ports 80/tcp,53/udp -o csv
  netpol matrix -f cluster/ -n blue-web -n blue-db -l app=api -o json
  netpol matrix -f examples/tenants -o svg > tenants.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var portList []l4.Port
			if ports != "" {
				var err error
				if portList, err = l4.ParsePortList(ports); err != nil {
					return usageError{fmt.Errorf("--ports: %w", err)}
				}
			}
			sel := labels.Everything()
			if selector != "" {
				var err error
				if sel, err = labels.Parse(selector); err != nil {
					return usageError{fmt.Errorf("--selector: %w", err)}
				}
			}
			e, err := in.load(cmd)
			if err != nil {
				return err
			}
			pods, err := filterPods(e.Cluster(), namespaces, sel)
			if err != nil {
				return err
			}
			if portList == nil {
				portList = declaredPorts(pods)
			}
			if len(pods) == 0 || len(portList) == 0 {
				return fmt.Errorf("nothing to decide: %d pods, %d ports (declare containerPorts or pass --ports)", len(pods), len(portList))
			}
			w := cmd.OutOrStdout()
			switch output {
			case "dot":
				return graph.WriteDOT(w, matrixGraph(e, pods, portList))
			case "svg":
				return writeSVG(cmd, matrixGraph(e, pods, portList))
			}
			m := e.Matrix(pods, pods, portList)
			switch output {
			case "json":
				return writeJSON(w, matrixCells(m))
			case "csv":
				return writeMatrixCSV(w, m)
			case "md":
				writeMatrixMarkdown(w, m)
			default:
				writeMatrixText(w, m)
			}
			return nil
		},
	}
	in.register(cmd)
	cmd.Flags().StringVar(&ports, "ports", "", "ports to decide, comma-separated: 80/tcp,53/udp (default: every declared container port)")
	cmd.Flags().StringSliceVarP(&namespaces, "namespace", "n", nil, "only pods in these namespaces; repeatable")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "only pods whose labels match this selector, e.g. app=web,tier!=db")
	outputFlag(cmd, &output, "text", "json", "csv", "md", "dot", "svg")
	return cmd
}

func filterPods(c *state.Cluster, namespaces []string, sel labels.Selector) ([]*state.Pod, error) {
	want := map[string]bool{}
	for _, ns := range namespaces {
		if c.Namespace(ns) == nil {
			return nil, fmt.Errorf("--namespace %q: no such namespace", ns)
		}
		want[ns] = true
	}
	var out []*state.Pod
	for _, p := range c.Pods {
		if (len(want) == 0 || want[p.Namespace.Name]) && sel.Matches(p.Labels) {
			out = append(out, p)
		}
	}
	return out, nil
}

// declaredPorts is the union of the pods' numeric container ports.
func declaredPorts(pods []*state.Pod) []l4.Port {
	seen := map[l4.Port]bool{}
	var out []l4.Port
	for _, p := range pods {
		for _, cp := range p.Ports {
			if !seen[cp.Port] {
				seen[cp.Port] = true
				out = append(out, cp.Port)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Num != out[j].Num {
			return out[i].Num < out[j].Num
		}
		return out[i].Proto < out[j].Proto
	})
	return out
}

type cellJSON struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
	Allowed  bool   `json:"allowed"`
}

func matrixCells(m *engine.Matrix) []cellJSON {
	out := make([]cellJSON, 0, len(m.Sources)*len(m.Destinations)*len(m.Ports))
	for i, s := range m.Sources {
		for j, d := range m.Destinations {
			for k, p := range m.Ports {
				out = append(out, cellJSON{From: s.Key(), To: d.Key(), Port: int(p.Num), Protocol: p.Proto.String(), Allowed: m.Allowed(i, j, k)})
			}
		}
	}
	return out
}

func writeMatrixCSV(w io.Writer, m *engine.Matrix) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"from", "to", "port", "protocol", "allowed"})
	for _, c := range matrixCells(m) {
		cw.Write([]string{c.From, c.To, strconv.Itoa(c.Port), c.Protocol, strconv.FormatBool(c.Allowed)})
	}
	cw.Flush()
	return cw.Error()
}

func mark(allowed bool) string {
	if allowed {
		return "."
	}
	return "X"
}

func writeMatrixText(w io.Writer, m *engine.Matrix) {
	for k, p := range m.Ports {
		if k > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s   (rows: from, columns: to; . allowed, X denied)\n", p)
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\t")
		for _, d := range m.Destinations {
			fmt.Fprintf(tw, "%s\t", d.Key())
		}
		fmt.Fprintln(tw)
		for i, s := range m.Sources {
			fmt.Fprintf(tw, "%s\t", s.Key())
			for j := range m.Destinations {
				fmt.Fprintf(tw, "%s\t", mark(m.Allowed(i, j, k)))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\n%d pods, %d ports: %d x %d behaviour classes decided\n", len(m.Sources), len(m.Ports), m.SourceClasses, m.DestinationClasses)
}

func writeMatrixMarkdown(w io.Writer, m *engine.Matrix) {
	for k, p := range m.Ports {
		if k > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "**%s**\n\n| from \\ to |", p)
		for _, d := range m.Destinations {
			fmt.Fprintf(w, " %s |", d.Key())
		}
		fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(m.Destinations)))
		for i, s := range m.Sources {
			fmt.Fprintf(w, "| %s |", s.Key())
			for j := range m.Destinations {
				fmt.Fprintf(w, " %s |", mark(m.Allowed(i, j, k)))
			}
			fmt.Fprintln(w)
		}
	}
}
