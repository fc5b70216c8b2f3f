package cli

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync/atomic"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/netpol/netpol/internal/diff"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/graph"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/words"
)

// matrixOptions are matrix's flags.
type matrixOptions struct {
	in                          inputFlags
	ports, output, selector, by string
	namespaces                  []string
	staged, services, classes   bool
	pairs                       bool
	portList                    []l4.Port
	sel                         labels.Selector
}

func newMatrix() *cobra.Command {
	o := matrixOptions{}
	cmd := &cobra.Command{
		Use:   "matrix -f MANIFESTS",
		Short: "Print which pods can reach which, on every port that matters",
		Long: `matrix decides every pair of pods on every port and prints the truth table:
rows are sources, columns destinations, '.' allowed and 'X' denied. The
ports are those the pods declare (containers[].ports) unless --ports names
others. The output is written while it is computed: memory does not grow
with it, whatever the format.

The text table is for a terminal. Ports whose tables are identical share
one table (headed "80/tcp, 443/tcp"). Rows are numbered and grouped by
namespace; the columns are the rows in the same order, headed by their
numbers written downwards (column 12 shows a 1 above a 2), with a space
between namespaces. A pod made by a Deployment is shown without its
ReplicaSet's template hash: web-7d4b9c8f6d-x2k9p as web-*-x2k9p.

  80/tcp   (rows: from, columns: to, numbered as the rows; . allowed, X denied)
                     1 23
  kube-system 1 dns  . ..
  shop        2 api  . .X
              3 web  . ..

-o csv, json and md have a record (or cell) per pair and port, named in
full: csv "from,to,port,protocol,allowed", json an array with one object
per line, {"from":"shop/api","to":"shop/web","port":80,"protocol":"TCP",
"allowed":false}.

-o connlist lists only what is allowed: per pair of pods with something
allowed, the ports folded into ranges per protocol. It decides every port
(1-65535 of TCP, UDP and SCTP) unless --ports names some, so it is the
whole truth, not only the declared ports; "all" is every port of every
protocol. A pod's connections to itself are left out (always allowed).

  FROM      TO        ALLOWED
  shop/api  shop/web  tcp 80-82,443; udp 53
  shop/web  shop/api  all

--by workload makes rows and columns the workloads instead of the pods:
the Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController,
Job or CronJob that made the pods (from the workload objects, or from a
pod's ownerReferences), named kind/name (shop/deployment/web), or a bare
pod as pod/NAME. Replicas share labels and so decide alike; where the pods
of two workloads do not (a policy that names one replica, a node or an
address), the cell says so rather than pick one: '~' in text and md,
"mixed":true in json and a mixed column in csv (allowed is true only when
every pair of their pods is allowed), "some pod pairs: ..." in connlist.
A workload towards itself is decided between its distinct pods.

-o json --classes prints the behaviour classes instead of pods: pods that
no selector, IP block, named port or node tells apart decide alike, as
sources and as destinations. Its size follows the policies, not the pairs
of classes (100,000 pods make tens of megabytes), because it says what
the kernel is told: each side of a class (egress, ingress) is a list of
steps, a step is a list of rules, and a rule matches a set of classes
(runs [first,last]) on some ports (every port unless --ports names some).
To decide class c towards class d on a port, walk c's egress steps with
d as the peer and d's ingress steps with c: in a step the first rule
whose ports hold the port and whose set holds the peer decides by its
outcome, none leaves the step's rest; the first step that does not answer
Next decides (Accept or Deny), and after the last the default allows.
Both sides must allow; a class of one pod reaches itself. Add --pairs for
each class's verdicts towards every class instead (quadratic in classes).

  {"set":3,"classes":[[1,2],[7,7]]}
  {"answer":0,"tier":"NetworkPolicy","rest":"Deny","rules":[{"outcome":"Accept",
    "ports":[{"protocol":"TCP","port":80,"endPort":82}],"set":3,
    "policy":"NetworkPolicy shop/web","rule":"ingress[0]"}]}      (one line each)
  {"class":1,"pods":["shop/api-1","shop/api-2"],"egress":[],"ingress":[0]}

Policies annotated netpol.io/staged: "true" are not enforced. With --staged,
each cell also shows the verdict once they are: '!' allowed now but the
staged policies would deny, '+' denied now but they would allow (JSON and
CSV gain a "staged" verdict per cell). Per pod, in text, md, json and csv.

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
  netpol matrix -f cluster/ -o connlist
  netpol matrix -f cluster/ --by workload
  netpol matrix -f cluster/ --by workload -o connlist --ports 80,443,53/udp
  netpol matrix -f cluster/ -o json --classes
  netpol matrix -f cluster/ --staged
  netpol matrix -f examples/tenants -o svg > tenants.svg
  netpol matrix -f examples/services --services -o csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	o.in.register(cmd)
	cmd.Flags().StringVar(&o.ports, "ports", "", "ports to decide, comma-separated: 80/tcp,53/udp (default: every declared container port; with -o connlist and --classes every port)")
	cmd.Flags().StringSliceVarP(&o.namespaces, "namespace", "n", nil, "only pods in these namespaces; repeatable")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "only pods whose labels match this selector, e.g. app=web,tier!=db")
	cmd.Flags().StringVar(&o.by, "by", "pod", "rows and columns: pod, or workload (the Deployment, StatefulSet, DaemonSet, Job ... that made the pods; a bare pod stands for itself)")
	cmd.Flags().BoolVar(&o.classes, "classes", false, "with -o json: the behaviour classes and the steps each of their sides walks (answers, rules, class sets), instead of pods x pods")
	cmd.Flags().BoolVar(&o.pairs, "pairs", false, "with --classes: each class's verdicts towards every class instead of the steps (quadratic in classes)")
	cmd.Flags().BoolVar(&o.services, "services", false, "columns are Service ports: whether each source reaches all, some or none of their backends")
	cmd.Flags().BoolVar(&o.staged, "staged", false, "also decide with the policies annotated netpol.io/staged enforced, and mark the cells that differ")
	outputFlag(cmd, &o.output, "text", "json", "csv", "md", "connlist", "dot", "svg")
	return cmd
}

// complete parses the flags that have a syntax.
func (o *matrixOptions) complete() error {
	if o.ports != "" {
		var err error
		if o.portList, err = l4.ParsePortList(o.ports); err != nil {
			return usageError{fmt.Errorf("--ports: %w", err)}
		}
	}
	o.sel = labels.Everything()
	if o.selector != "" {
		var err error
		if o.sel, err = labels.Parse(o.selector); err != nil {
			return usageError{fmt.Errorf("--selector: %w", err)}
		}
	}
	return nil
}

// validate refuses the combinations that mean nothing.
func (o *matrixOptions) validate() error {
	switch {
	case o.by != "pod" && o.by != "workload":
		return usageError{fmt.Errorf("--by %q: want pod or workload", o.by)}
	case o.services && (o.ports != "" || o.staged || o.classes || o.by != "pod" || (o.output != "text" && o.output != "json" && o.output != "csv")):
		return usageError{fmt.Errorf("--services prints text, json or csv, and takes no --ports, --staged, --by or --classes")}
	case o.classes && (o.output != "json" || o.by != "pod" || o.staged):
		return usageError{fmt.Errorf("--classes is a JSON view of the classes: it needs -o json, and takes no --by or --staged")}
	case o.pairs && !o.classes:
		return usageError{fmt.Errorf("--pairs is a form of the class view: it needs --classes")}
	case o.staged && (o.by != "pod" || o.output == "connlist"):
		return usageError{fmt.Errorf("--staged marks the cells of the pod tables (text, md, json, csv): it takes no --by workload or -o connlist")}
	case o.by != "pod" && (o.output == "dot" || o.output == "svg"):
		return usageError{fmt.Errorf("-o %s draws classes of pods, not workloads: it takes no --by", o.output)}
	}
	return nil
}

func (o *matrixOptions) run(cmd *cobra.Command) error {
	e, err := o.in.load(cmd)
	if err != nil {
		return err
	}
	pods, err := filterPods(e.Cluster(), o.namespaces, o.sel)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	if o.services {
		if err := writeServiceMatrix(bw, o.output, e.ServiceMatrix(pods, e.Cluster().Services)); err != nil {
			return err
		}
		return bw.Flush()
	}
	// The port dimension: ranges, each decided on its first port. The
	// lists (connlist, classes) decide every port: they say all that is
	// allowed.
	var dims []l4.Range
	switch {
	case o.portList != nil:
		dims = portRanges(o.portList)
	case o.output == "connlist" || o.classes:
		dims = diff.Segments(e)
	default:
		dims = portRanges(declaredPorts(pods))
	}
	if len(pods) == 0 || len(dims) == 0 {
		return fmt.Errorf("nothing to decide: %d pods, %d ports (declare containerPorts or pass --ports)", len(pods), len(dims))
	}
	ports := make([]l4.Port, len(dims))
	for k, r := range dims {
		ports[k] = l4.Port{Proto: r.Proto, Num: r.First}
	}
	switch o.output {
	case "dot":
		return graph.WriteDOT(cmd.OutOrStdout(), matrixGraph(e, pods, ports))
	case "svg":
		return writeSVG(cmd, matrixGraph(e, pods, ports))
	}

	if o.classes && !o.pairs {
		return writeSides(cmd, bw, o.in.quiet, e, pods, ports, dims)
	}
	cm := e.ClassMatrix(pods, ports)
	g := &grid{ports: dims, pods: len(pods), byWorkload: o.by == "workload"}
	if g.byWorkload {
		g.units = workloadUnits(pods)
	} else {
		g.units = podUnits(pods)
	}
	g.enforced = newLayer(cm, g.units)
	if o.staged {
		g.staged = g.enforced
		if se := e.Staged(); se != nil {
			g.staged = newLayer(se.ClassMatrix(pods, ports), g.units)
		}
	}
	// The progress line counts the class rows decided, and goes as soon as
	// the answer starts.
	p := startProgress(cmd, o.in.quiet)
	decided := g.enforced.rows.decided.Load
	if g.staged != nil && g.staged != g.enforced {
		decided = func() int64 { return g.enforced.rows.decided.Load() + g.staged.rows.decided.Load() }
	}
	p.Stage(fmt.Sprintf("deciding the matrix of %d pods (%d behaviour classes)", len(pods), cm.Classes()), decided, "class rows")
	w := &stopOnWrite{w: bw, stop: p.Stop}
	marks := marker{staged: g.staged != nil, byWorkload: g.byWorkload}
	switch {
	case o.classes:
		err = writeClassPairsJSON(w, g.enforced.rows, dims)
	case o.output == "json":
		var jc *jsonCells
		if jc, err = newJSONCells(w, g); err == nil {
			if err = writeCells(g, jc); err == nil {
				err = jc.finish()
			}
		}
	case o.output == "csv":
		var cc *csvCells
		if cc, err = newCSVCells(w, g); err == nil {
			err = writeCells(g, cc)
		}
	case o.output == "md":
		err = writeMatrixMarkdown(w, g, marks)
	case o.output == "connlist":
		err = writeConnList(w, g)
	default:
		err = writeMatrixText(w, g, marks, shortNames(g, pods), matrixSummary(g, cm))
	}
	p.Stop()
	if err != nil {
		return err
	}
	return bw.Flush()
}

// writeSides answers every side of every class, with a progress line,
// and writes the class view.
func writeSides(cmd *cobra.Command, bw *bufio.Writer, quiet bool, e *engine.Engine, pods []*state.Pod, ports []l4.Port, dims []l4.Range) error {
	p := startProgress(cmd, quiet)
	var done atomic.Int64
	p.Stage(fmt.Sprintf("answering both sides of every behaviour class of %d pods", len(pods)), done.Load, "sides")
	s := e.Sides(pods, ports, &done)
	p.Stop()
	if err := writeClassSidesJSON(bw, s, dims); err != nil {
		return err
	}
	return bw.Flush()
}

// matrixSummary is the text table's last line: what was decided, and the
// work it took.
func matrixSummary(g *grid, cm *engine.ClassMatrix) string {
	rows := words.Count(g.pods, "pod")
	if g.byWorkload {
		rows = words.Count(len(g.units), "workload") + " of " + rows
	}
	classes := "behaviour classes"
	if cm.Classes() == 1 {
		classes = "behaviour class"
	}
	return fmt.Sprintf("%s, %s: %d %s decided", rows, words.Count(len(g.ports), "port"), cm.Classes(), classes)
}

// portRanges makes each port a range of one.
func portRanges(ports []l4.Port) []l4.Range {
	out := make([]l4.Range, len(ports))
	for k, p := range ports {
		out[k] = l4.Range{Proto: p.Proto, First: p.Num, Last: p.Num}
	}
	return out
}

// stopOnWrite stops the progress line before the first byte of the answer,
// so that the two never share a terminal line.
type stopOnWrite struct {
	w    io.Writer
	stop func()
}

func (s *stopOnWrite) Write(b []byte) (int, error) {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	return s.w.Write(b)
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
