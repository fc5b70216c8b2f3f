package engine

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

func verdictWord(allowed bool) string {
	if allowed {
		return "ALLOWED"
	}
	return "DENIED"
}

// WriteTrace prints a verdict for a person: the decision on the first line,
// then for each side the tiers visited and what decided.
func WriteTrace(w io.Writer, f Flow, v Verdict) {
	fmt.Fprintf(w, "%s  %s (%s) -> %s (%s) port %s\n", verdictWord(v.Allowed), f.Src, f.Src.IP, f.Dst, f.Dst.IP, f.Port)
	if v.Note != "" {
		fmt.Fprintf(w, "  %s\n", v.Note)
		return
	}
	for _, s := range []struct {
		title string
		side  Side
	}{{"egress of " + f.Src.String(), v.Egress}, {"ingress of " + f.Dst.String(), v.Ingress}} {
		fmt.Fprintf(w, "  %s: %s\n", s.title, strings.ToLower(verdictWord(s.side.Allowed)))
		if s.side.Note != "" {
			fmt.Fprintf(w, "    %s\n", s.side.Note)
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, st := range s.side.Steps {
			what := st.Note
			if st.Policy != nil {
				what = fmt.Sprintf("%s rule %s", st.Policy, st.Rule)
				if st.Note != "" {
					what += " (" + st.Note + ")"
				}
			}
			if len(st.IsolatedBy) > 0 {
				names := make([]string, len(st.IsolatedBy))
				for i, r := range st.IsolatedBy {
					names[i] = r.String()
				}
				what = "isolated by " + strings.Join(names, ", ") + "; no rule of theirs allows this"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", st.Tier, st.Action, what)
		}
		tw.Flush()
	}
}
