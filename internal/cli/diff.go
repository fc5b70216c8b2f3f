package cli

import (
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/netpol/netpol/internal/escape"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/diff"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/graph"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/words"
)

func newDiff() *cobra.Command {
	var in inputFlags
	var output string
	var explain bool
	cmd := &cobra.Command{
		Use:   "diff OLD NEW | diff NEW --kubeconfig FILE",
		Short: "Show the connectivity that changes between two versions of a cluster",
		Long: `diff decides every pair of pods in OLD and in NEW on every port and prints
what changes: flows gained (allowed in NEW only), lost (allowed in OLD only)
and changed (some ports gained, others lost), grouped by namespace pair. It
answers "what does this pull request change?".

OLD and NEW are files or directories (recursive) of manifests, or - for
stdin (one side at most). With one argument and --kubeconfig or --context,
OLD is the live cluster and NEW the manifests.

Pods are matched by namespace/name. Pods present on one side only are
listed apart and not compared: their flows would all be new (or gone) and
bury the policy changes. Ports are every port of TCP, UDP and SCTP, cut into
ranges wherever a policy of either side or a declared container port draws
a boundary, so "any/tcp except 8443" means exactly that. Pods that policy
treats alike on both sides are shown together, as one entry.

When the input has Services, a Services section lists the Service ports
whose reach changed, per source namespace: how many of its pods reach all,
some or none of the port's backends, before and after ("2 some, 1 none ->
1 all, 2 some"; json: "services"; md: a table; csv has pod pairs only).

--explain adds, for every changed range, the rule that decided an example
flow on the egress and ingress sides, in OLD and in NEW.

Exit status, as diff(1): 0 no change, 1 changes (so a CI job can gate on
it), 2 trouble (bad input or flags, a cluster that cannot be read).`,
		Example: `  netpol diff examples/diff/old examples/diff/new
  netpol diff base/ head/ --explain -o md > comment.md
  netpol diff ./manifests --context prod -o json
  netpol diff old.yaml new.yaml -o svg > diff.svg`,
		Args: func(cmd *cobra.Command, args []string) error {
			live := in.kubeconfig != "" || in.context != ""
			switch {
			case live && len(args) != 1:
				return usageError{fmt.Errorf("with --kubeconfig/--context the live cluster is OLD: give NEW only (got %d arguments)", len(args))}
			case !live && len(args) != 2:
				return usageError{fmt.Errorf("want OLD and NEW (files or directories), or NEW with --kubeconfig/--context for the live cluster as OLD (got %d arguments)", len(args))}
			case len(args) == 2 && args[0] == "-" && args[1] == "-":
				return usageError{fmt.Errorf("only one side can be read from stdin")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			shape, err := source.ParseANPShape(in.anpShape)
			if err != nil {
				return usageError{err}
			}
			var old, new *engine.Engine
			if len(args) == 1 {
				old, err = in.loadFrom(cmd, shape, nil)
				var none noCluster
				if errors.As(err, &none) {
					return usageError{fmt.Errorf("OLD: no cluster to read: %v", none.error)}
				}
			} else {
				old, err = in.loadFrom(cmd, shape, args[:1])
			}
			if err != nil {
				return sideError("OLD", err)
			}
			if new, err = in.loadFrom(cmd, shape, args[len(args)-1:]); err != nil {
				return sideError("NEW", err)
			}
			p := startProgress(cmd, in.quiet)
			p.Stage(fmt.Sprintf("comparing %d pods with %d", len(old.Cluster().Pods), len(new.Cluster().Pods)), nil, "")
			r := diff.Compare(old, new, diff.Options{Explain: explain})
			p.Stop()
			w := cmd.OutOrStdout()
			switch output {
			case "json":
				err = writeJSON(w, r)
			case "csv":
				err = writeDiffCSV(w, r, explain)
			case "md":
				writeDiffMarkdown(w, r, explain)
			case "dot":
				err = graph.WriteDOT(w, diffGraph(r))
			case "svg":
				err = writeSVG(cmd, diffGraph(r))
			default:
				writeDiffText(w, r, explain, colourful(w))
			}
			if err != nil {
				return troubleError{err}
			}
			if !r.Empty() {
				return errSilent{fmt.Errorf("changes")}
			}
			return nil
		},
	}
	in.registerCluster(cmd, "OLD is the live cluster read through this kubeconfig")
	cmd.Flags().BoolVar(&explain, "explain", false, "show the rule that decided each changed range, on both sides, in OLD and NEW")
	outputFlag(cmd, &output, "text", "json", "csv", "md", "dot", "svg")
	return cmd
}

// sideError names the side whose input failed; anything but a usage or
// input error is trouble, never the exit 1 of "changes".
func sideError(side string, err error) error {
	if isInputError(err) {
		return err // the findings name their files already
	}
	return troubleError{fmt.Errorf("%s: %w", side, err)}
}

// asTrouble makes any failure but a usage or input error trouble (exit 2),
// for a command whose exit 1 is a result.
func asTrouble(err error) error {
	var trouble troubleError
	if isInputError(err) || errors.As(err, &trouble) {
		return err
	}
	return troubleError{err}
}

func isInputError(err error) bool {
	var input diag.InputError
	var usage usageError
	return errors.As(err, &input) || errors.As(err, &usage)
}

// colourful is true for a terminal, unless NO_COLOR is set.
func colourful(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// changeMark is the sign of a change: + gained, - lost, ~ changed.
var changeMark = map[diff.Change]string{diff.Gained: "+", diff.Lost: "-", diff.Changed: "~"}

// ANSI colours of the signs, for a terminal.
var changeColour = map[diff.Change]string{diff.Gained: "\x1b[32m", diff.Lost: "\x1b[31m", diff.Changed: "\x1b[33m"}

func summaryLine(r *diff.Result) string {
	s := r.Summary
	services := ""
	if len(r.Services) > 0 {
		services = "; " + words.Count(len(r.Services), "Service port") + " reached differently"
	}
	if len(r.Groups) == 0 {
		if services != "" {
			return "no pod-to-pod changes" + services
		}
		return "no connectivity changes"
	}
	return fmt.Sprintf("%d gained, %d lost, %d changed, over %s", s.Gained, s.Lost, s.Changed, words.Count(s.PodPairs, "pod pair")) + services
}

// entryPorts is "+8443/tcp -8080/tcp" for a changed entry, else the ports.
func entryPorts(e diff.Entry) string {
	switch e.Change {
	case diff.Gained:
		return diff.FormatPorts(e.Gained)
	case diff.Lost:
		return diff.FormatPorts(e.Lost)
	}
	return "+" + diff.FormatPorts(e.Gained) + "  -" + diff.FormatPorts(e.Lost)
}

// names lists a few pod names; JSON and CSV have them all.
func names(pods []string) string {
	const most = 3
	if len(pods) <= most {
		return strings.Join(pods, ", ")
	}
	return strings.Join(pods[:most], ", ") + fmt.Sprintf(" +%d more", len(pods)-most)
}

func writeDiffText(w io.Writer, r *diff.Result, explain, colour bool) {
	fmt.Fprintln(w, summaryLine(r))
	for _, g := range r.Groups {
		fmt.Fprintf(w, "\n%s -> %s\n", g.From, g.To)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, e := range g.Entries {
			mark := changeMark[e.Change]
			if colour {
				mark = changeColour[e.Change] + mark + "\x1b[0m"
			}
			fmt.Fprintf(tw, "  %s %s -> %s\t%s\n", mark, names(e.From), names(e.To), entryPorts(e))
			if explain {
				tw.Flush()
				for _, x := range e.Explain {
					fmt.Fprintf(w, "      %s %s, e.g. %s -> %s %s\n        old: %s\n        new: %s\n",
						x.Change, diff.FormatPorts(x.Ports), x.From, x.To, x.Port, diff.Describe(x.Old), diff.Describe(x.New))
				}
			}
		}
		tw.Flush()
	}
	writeServiceChanges(w, r)
	writePodLists(w, r, "")
}

// writeServiceChanges lists the Service ports whose reach changed.
func writeServiceChanges(w io.Writer, r *diff.Result) {
	if len(r.Services) == 0 {
		return
	}
	fmt.Fprintln(w, "\nServices (pods of each namespace by the backends they reach: all, some, none)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Services {
		fmt.Fprintf(tw, "  %s -> svc/%s:%s\t%s -> %s\n", c.FromNamespace, c.Service, c.Port, c.Old, c.New)
	}
	tw.Flush()
}

// writePodLists names the pods that were not compared; bullet prefixes
// each line (markdown).
func writePodLists(w io.Writer, r *diff.Result, bullet string) {
	for _, l := range []struct {
		what string
		pods []string
	}{{"only in NEW", r.AddedPods}, {"only in OLD", r.RemovedPods}} {
		if len(l.pods) > 0 {
			fmt.Fprintf(w, "\n%s%s %s (not compared): %s\n", bullet, words.Count(len(l.pods), "pod"), l.what, strings.Join(l.pods, ", "))
		}
	}
}

func writeDiffMarkdown(w io.Writer, r *diff.Result, explain bool) {
	fmt.Fprintf(w, "### netpol diff: %s\n", summaryLine(r))
	word := map[diff.Change]string{diff.Gained: "**+** gained", diff.Lost: "**−** lost", diff.Changed: "**±** changed"}
	for _, g := range r.Groups {
		fmt.Fprintf(w, "\n#### %s → %s\n\n| change | from | to | ports |\n|---|---|---|---|\n", mdCell(g.From), mdCell(g.To))
		for _, e := range g.Entries {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", word[e.Change], mdCell(names(e.From)), mdCell(names(e.To)), mdCell(entryPorts(e)))
		}
		if !explain {
			continue
		}
		fmt.Fprint(w, "\n<details><summary>why</summary>\n\n")
		for _, e := range g.Entries {
			for _, x := range e.Explain {
				fmt.Fprintf(w, "- %s %s, e.g. %s → %s %s\n  - old: %s\n  - new: %s\n",
					x.Change, mdCell(diff.FormatPorts(x.Ports)), mdCode(x.From), mdCode(x.To), mdCell(x.Port), mdCell(diff.Describe(x.Old)), mdCell(diff.Describe(x.New)))
			}
		}
		fmt.Fprint(w, "\n</details>\n")
	}
	if len(r.Services) > 0 {
		fmt.Fprint(w, "\n#### Services\n\n| from pods of | Service port | backends reached, before | after |\n|---|---|---|---|\n")
		for _, c := range r.Services {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", mdCell(c.FromNamespace), mdCell("svc/"+c.Service+":"+c.Port), mdCell(c.Old), mdCell(c.New))
		}
	}
	writePodLists(w, r, "")
}

// mdCode is a name as Markdown code; names as the API server allows them
// hold no backtick, and anything else is plain escaped text.
func mdCode(s string) string {
	if strings.Contains(s, "`") || escape.Controls(s) != s {
		return mdCell(s)
	}
	return "`" + s + "`"
}

// mdCell is text in a Markdown table cell or list item.
func mdCell(s string) string { return escape.Markdown(s) }

// writeDiffCSV writes one row per changed port range: a spreadsheet or a
// script filters rows without parsing lists.
func writeDiffCSV(w io.Writer, r *diff.Result, explain bool) error {
	cw := csv.NewWriter(w)
	head := []string{"from_namespace", "from", "to_namespace", "to", "change", "protocol", "port", "end_port"}
	if explain {
		head = append(head, "old", "new")
	}
	cw.Write(head)
	for _, g := range r.Groups {
		for _, e := range g.Entries {
			row := func(change diff.Change, pr diff.PortRange, x *diff.Explanation) {
				rec := []string{g.From, strings.Join(e.From, " "), g.To, strings.Join(e.To, " "), string(change),
					pr.Proto.String(), strconv.Itoa(int(pr.First)), strconv.Itoa(int(pr.Last))}
				if x != nil {
					rec = append(rec, diff.Describe(x.Old), diff.Describe(x.New))
				}
				cw.Write(rec)
			}
			if explain {
				for i, x := range e.Explain {
					for _, pr := range x.Ports {
						row(x.Change, pr, &e.Explain[i])
					}
				}
				continue
			}
			for _, pr := range e.Gained {
				row(diff.Gained, pr, nil)
			}
			for _, pr := range e.Lost {
				row(diff.Lost, pr, nil)
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
