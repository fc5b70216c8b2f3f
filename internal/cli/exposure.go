package cli

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/escape"
	"github.com/netpol/netpol/internal/exposure"
	"github.com/netpol/netpol/internal/words"
)

func newExposure() *cobra.Command {
	var in inputFlags
	var output string
	var namespaces []string
	cmd := &cobra.Command{
		Use:   "exposure -f MANIFESTS",
		Short: "Who could reach each workload, and what it could reach: selectors, blocks",
		Long: `exposure says, per workload (a controller's pods in a namespace, or a bare
pod) and direction, through which selectors and address blocks traffic is
decided, each with the rule that decides it: the answer for pods that do
not exist yet, where a matrix answers for the pods of the input.

Entries are listed in the order the tiers decide (admin rules by priority
and rule order, then the NetworkPolicy tier, then baseline): the first that
matches a connection decides it; a pass leaves it to the NetworkPolicy tier
(from the admin tier) or to the default (from a ClusterNetworkPolicy's
baseline tier). The last line is what no entry decides: denied when
NetworkPolicies isolate the pods, else allowed by default. A pod selector
counts the pods it matches today; it matches every pod labelled alike
later too. "open to" names what an allowing entry opens fully, with nothing
before it that could take part back: every namespace's pods, 0.0.0.0/0 or
::/0, or anything (no policy decides). A tier of more than 3 entries that
many workloads share (admin policies over every namespace labelled alike)
is listed at its first workload, and named after that.

-o json writes {"blocks": [...], "workloads": [...]}: each tier once, as
a block of entries, and each workload's sides as the IDs of their blocks
in order, with rest, isolatedBy and open.`,
		Example: `  netpol exposure -f examples/tenants
  netpol exposure -f examples/tenants -n blue-db -o json | jq '.[].ingress.open'
  netpol exposure -f cluster/ -o md > exposure.md
  netpol exposure --context prod -n payments`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := in.load(cmd)
			if err != nil {
				return err
			}
			r := exposure.Of(e, exposure.Options{Namespaces: namespaces})
			w := bufio.NewWriter(cmd.OutOrStdout())
			switch output {
			case "json":
				err = writeJSON(w, r)
			case "md":
				writeExposureMarkdown(w, r)
			default:
				writeExposureText(w, r)
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
	in.register(cmd)
	cmd.Flags().StringSliceVarP(&namespaces, "namespace", "n", nil, "only the workloads of these namespaces (repeatable)")
	outputFlag(cmd, &output, "text", "json", "md")
	return cmd
}

// podsToday is "3 pods today", or "" for a peer that is no pod selector.
func podsToday(en exposure.Entry) string {
	if en.PodsToday == nil {
		return ""
	}
	return words.Count(*en.PodsToday, "pod") + " today"
}

// sideHead is what a side is in a few words: isolated or not, and what it
// is open to.
func sideHead(s exposure.Side) string {
	var parts []string
	if len(s.IsolatedBy) > 0 {
		parts = append(parts, "isolated by "+strings.Join(s.IsolatedBy, ", "))
	}
	if len(s.Open) > 0 {
		parts = append(parts, "open to "+strings.Join(s.Open, ", "))
	}
	return strings.Join(parts, "; ")
}

// restText is the last line of a side.
func restText(s exposure.Side) string {
	if s.Rest == "deny" {
		return "everything else (isolated)"
	}
	return "everything else (by default)"
}

// listedBlocks remembers where a block was first written out: a block
// of more than inlineEntries entries is listed once, and later sides
// name it, so that a cluster whose thousand admin policies select every
// namespace alike is not written once per workload.
type listedBlocks map[int]string

const inlineEntries = 3

// seen returns where blk was listed, or records here as the place.
func (l listedBlocks) seen(blk *exposure.Block, here string) (string, bool) {
	if len(blk.Entries) <= inlineEntries {
		return "", false
	}
	if at, ok := l[blk.ID]; ok {
		return at, true
	}
	l[blk.ID] = here
	return "", false
}

type exposureSide struct {
	name string
	side exposure.Side
}

func sidesOf(w *exposure.Workload) []exposureSide {
	return []exposureSide{{"ingress", w.Ingress}, {"egress", w.Egress}}
}

func writeExposureText(w io.Writer, r *exposure.Report) {
	listed := listedBlocks{}
	for i := range r.Workloads {
		wl := &r.Workloads[i]
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s)\n", escape.Controls(wl.Display()), words.Count(len(wl.Pods), "pod"))
		for _, d := range sidesOf(wl) {
			fmt.Fprintf(w, "  %s  %s\n", d.name, escape.Controls(sideHead(d.side)))
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			for _, id := range d.side.Blocks {
				blk := r.Blocks[id]
				if at, ok := listed.seen(blk, wl.Display()+" "+d.name); ok {
					fmt.Fprintf(tw, "    %s\t%s\n", blk.Tier, escape.Controls(fmt.Sprintf("the %d entries listed for %s", len(blk.Entries), at)))
					continue
				}
				for _, en := range blk.Entries {
					line := []string{blk.Tier, en.Verdict, en.Peer, en.Ports, en.Policy.String() + " " + en.Rule, podsToday(en)}
					if en.Note != "" {
						line = append(line, en.Note)
					}
					for i := range line {
						line[i] = escape.Controls(line[i]) // user text, never a tab that moves columns
					}
					fmt.Fprintf(tw, "    %s\n", strings.Join(line, "\t"))
				}
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", "rest", d.side.Rest, restText(d.side))
			tw.Flush()
		}
	}
}

func writeExposureMarkdown(w io.Writer, r *exposure.Report) {
	listed := listedBlocks{}
	for i := range r.Workloads {
		wl := &r.Workloads[i]
		fmt.Fprintf(w, "### %s (%s)\n\n", escape.Markdown(wl.Display()), words.Count(len(wl.Pods), "pod"))
		for _, d := range sidesOf(wl) {
			head := sideHead(d.side)
			if head != "" {
				head = ": " + head
			}
			fmt.Fprintf(w, "**%s**%s\n\n", d.name, escape.Markdown(head))
			fmt.Fprintln(w, "| # | tier | verdict | peer | ports | rule | pods today |")
			fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
			n := 0
			for _, id := range d.side.Blocks {
				blk := r.Blocks[id]
				if at, ok := listed.seen(blk, wl.Display()+" "+d.name); ok {
					fmt.Fprintf(w, "| %d-%d | %s | | %s | | | |\n", n+1, n+len(blk.Entries), blk.Tier,
						mdCell(fmt.Sprintf("the %d entries listed for %s", len(blk.Entries), at)))
					n += len(blk.Entries)
					continue
				}
				for _, en := range blk.Entries {
					n++
					today := ""
					if en.PodsToday != nil {
						today = strconv.Itoa(*en.PodsToday)
					}
					rule := en.Policy.String() + " " + en.Rule
					if en.Note != "" {
						rule += " (" + en.Note + ")"
					}
					fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s |\n", n, blk.Tier, en.Verdict,
						mdCell(en.Peer), mdCell(en.Ports), mdCell(rule), today)
				}
			}
			fmt.Fprintf(w, "| | rest | %s | %s | | | |\n\n", d.side.Rest, restText(d.side))
		}
	}
}
