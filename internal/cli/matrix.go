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
	var staged, services bool
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

Policies annotated netpol.io/staged: "true" are not enforced. With --staged,
each cell also shows the verdict once they are: '!' allowed now but the
staged policies would deny, '+' denied now but they would allow (JSON and
CSV gain a "staged" verdict per cell).

-o dot and -o svg draw the enforced verdicts as a graph: namespaces as
boxes, each class of pods (within a namespace) as one node, an arrow where
the class may connect to another, labelled with the ports. SVG is rendered
by netpol itself (no Graphviz needed); DOT is for Graphviz (dot -Tpng).

With --services the columns are the ports of the input's Services instead:
each cell says whether the source reaches all, some or none of the port's
backends (policy applies after the Service translation, to each backend pod
on its target port); '-' is a port without backends. Text, json and csv.`,
		Example: `  netpol matrix -f examples/tenants
  netpol matrix -f examples/tenants --ports 80/tcp,53/udp -o csv
  netpol matrix -f cluster/ -n blue-web -n blue-db -l app=api -o json
  netpol matrix -f cluster/ --staged
  netpol matrix -f examples/tenants -o svg > tenants.svg
  netpol matrix -f examples/services --services -o csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if services && (ports != "" || staged || output == "md" || output == "dot" || output == "svg") {
				return usageError{fmt.Errorf("--services prints text, json or csv, and takes no --ports or --staged")}
			}
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
			if services {
				return writeServiceMatrix(cmd.OutOrStdout(), output, e.ServiceMatrix(pods, e.Cluster().Services))
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
			p := startProgress(cmd, in.quiet)
			p.Stage(fmt.Sprintf("computing the matrix of %d pods", len(pods)), nil, "")
			mm := matrices{enforced: e.Matrix(pods, pods, portList)}
			if staged {
				mm.staged = mm.enforced
				if se := e.Staged(); se != nil {
					mm.staged = se.Matrix(pods, pods, portList)
				}
			}
			p.Stop()
			switch output {
			case "json":
				return writeJSON(w, matrixCells(mm))
			case "csv":
				return writeMatrixCSV(w, mm)
			case "md":
				writeMatrixMarkdown(w, mm)
			default:
				writeMatrixText(w, mm)
			}
			return nil
		},
	}
	in.register(cmd)
	cmd.Flags().StringVar(&ports, "ports", "", "ports to decide, comma-separated: 80/tcp,53/udp (default: every declared container port)")
	cmd.Flags().StringSliceVarP(&namespaces, "namespace", "n", nil, "only pods in these namespaces; repeatable")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "only pods whose labels match this selector, e.g. app=web,tier!=db")
	cmd.Flags().BoolVar(&services, "services", false, "columns are Service ports: whether each source reaches all, some or none of their backends")
	cmd.Flags().BoolVar(&staged, "staged", false, "also decide with the policies annotated netpol.io/staged enforced, and mark the cells that differ")
	outputFlag(cmd, &output, "text", "json", "csv", "md", "dot", "svg")
	return cmd
}

// matrices are the enforced matrix and, with --staged, the staged one over
// the same pods and ports (nil without --staged).
type matrices struct {
	enforced, staged *engine.Matrix
}

// mark is a cell's text: '.' allowed, 'X' denied; with a staged matrix,
// '!' allowed but would be denied, '+' denied but would be allowed.
func (mm matrices) mark(i, j, k int) string {
	now := mm.enforced.Allowed(i, j, k)
	if mm.staged != nil && mm.staged.Allowed(i, j, k) != now {
		if now {
			return "!"
		}
		return "+"
	}
	if now {
		return "."
	}
	return "X"
}

func (mm matrices) legend() string {
	if mm.staged != nil {
		return ". allowed, X denied; staged: ! would be denied, + would be allowed"
	}
	return ". allowed, X denied"
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
	// Staged is the verdict with the staged policies enforced (--staged).
	Staged *bool `json:"staged,omitempty"`
}

func matrixCells(mm matrices) []cellJSON {
	m := mm.enforced
	out := make([]cellJSON, 0, len(m.Sources)*len(m.Destinations)*len(m.Ports))
	for i, s := range m.Sources {
		for j, d := range m.Destinations {
			for k, p := range m.Ports {
				c := cellJSON{From: s.Key(), To: d.Key(), Port: int(p.Num), Protocol: p.Proto.String(), Allowed: m.Allowed(i, j, k)}
				if mm.staged != nil {
					st := mm.staged.Allowed(i, j, k)
					c.Staged = &st
				}
				out = append(out, c)
			}
		}
	}
	return out
}

func writeMatrixCSV(w io.Writer, mm matrices) error {
	cw := csv.NewWriter(w)
	header := []string{"from", "to", "port", "protocol", "allowed"}
	if mm.staged != nil {
		header = append(header, "staged")
	}
	cw.Write(header)
	for _, c := range matrixCells(mm) {
		row := []string{c.From, c.To, strconv.Itoa(c.Port), c.Protocol, strconv.FormatBool(c.Allowed)}
		if c.Staged != nil {
			row = append(row, strconv.FormatBool(*c.Staged))
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

func writeMatrixText(w io.Writer, mm matrices) {
	m := mm.enforced
	for k, p := range m.Ports {
		if k > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s   (rows: from, columns: to; %s)\n", p, mm.legend())
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\t")
		for _, d := range m.Destinations {
			fmt.Fprintf(tw, "%s\t", d.Key())
		}
		fmt.Fprintln(tw)
		for i, s := range m.Sources {
			fmt.Fprintf(tw, "%s\t", s.Key())
			for j := range m.Destinations {
				fmt.Fprintf(tw, "%s\t", mm.mark(i, j, k))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\n%d pods, %d ports: %d x %d behaviour classes decided\n", len(m.Sources), len(m.Ports), m.SourceClasses, m.DestinationClasses)
}

func writeMatrixMarkdown(w io.Writer, mm matrices) {
	m := mm.enforced
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
				fmt.Fprintf(w, " %s |", mm.mark(i, j, k))
			}
			fmt.Fprintln(w)
		}
	}
}

// writeServiceMatrix prints sources x Service ports, each cell all, some or
// none of the port's backends reached.
func writeServiceMatrix(w io.Writer, output string, m *engine.ServiceMatrix) error {
	if len(m.Sources) == 0 || len(m.Columns) == 0 {
		return fmt.Errorf("nothing to decide: %d pods, %d Service ports", len(m.Sources), len(m.Columns))
	}
	switch output {
	case "json":
		type cell struct {
			From    string `json:"from"`
			Service string `json:"service"`
			Port    int    `json:"port"`
			Name    string `json:"name,omitempty"`
			Proto   string `json:"protocol"`
			Reach   string `json:"reach"`
		}
		var out []cell
		for i, s := range m.Sources {
			for j, c := range m.Columns {
				out = append(out, cell{From: s.Key(), Service: c.Service.Key(), Port: int(c.Port.Port.Num), Name: c.Port.Name,
					Proto: c.Port.Port.Proto.String(), Reach: m.Reach(i, j).String()})
			}
		}
		return writeJSON(w, out)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"from", "service", "port", "name", "protocol", "reach"})
		for i, s := range m.Sources {
			for j, c := range m.Columns {
				cw.Write([]string{s.Key(), c.Service.Key(), strconv.Itoa(int(c.Port.Port.Num)), c.Port.Name, c.Port.Port.Proto.String(), m.Reach(i, j).String()})
			}
		}
		cw.Flush()
		return cw.Error()
	}
	fmt.Fprintln(w, "Service ports   (rows: from; backends reached: all, some, none; - no backends)")
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for _, c := range m.Columns {
		fmt.Fprintf(tw, "%s\t", c)
	}
	fmt.Fprintln(tw)
	for i, s := range m.Sources {
		fmt.Fprintf(tw, "%s\t", s.Key())
		for j := range m.Columns {
			r := m.Reach(i, j)
			word := r.String()
			if r == engine.ReachNoBackends {
				word = "-"
			}
			fmt.Fprintf(tw, "%s\t", word)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
