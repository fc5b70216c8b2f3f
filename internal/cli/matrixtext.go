package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/netpol/netpol/internal/state"
)

// writeMatrixText writes the matrix for a person: one table per group of
// ports whose tables are identical; rows numbered and grouped by
// namespace; columns in the same order, headed by the rows' numbers
// written downwards (a legend, not a header as wide as a name), with a
// space between namespaces. Generated pod names lose the ReplicaSet's
// template hash (web-7d4b9c8f6d-x2k9p is web-*-x2k9p).
func writeMatrixText(w io.Writer, g *grid, marks marker, names []string, summary string) error {
	nsWidth, nameWidth := 0, 0
	for u, x := range g.units {
		nsWidth = max(nsWidth, len(x.ns))
		nameWidth = max(nameWidth, len(names[u]))
	}
	numWidth := len(strconv.Itoa(len(g.units)))
	labelWidth := nsWidth + 1 + numWidth + 1 + nameWidth + 2

	row := g.rowCells()
	var b []byte
	for gi, group := range portGroups(len(g.ports), g.classRows()...) {
		if gi > 0 {
			b = append(b, '\n')
		}
		b = fmt.Appendf(b, "%s   (rows: from, columns: to, numbered as the rows; %s)\n", groupTitle(g, group), marks.legend())
		// The column numbers, one digit per line, most significant first.
		for place := numWidth - 1; place >= 0; place-- {
			b = append(b, strings.Repeat(" ", labelWidth)...)
			for v := range g.units {
				if v > 0 && g.units[v].ns != g.units[v-1].ns {
					b = append(b, ' ')
				}
				digits := strconv.Itoa(v + 1)
				if i := len(digits) - 1 - place; i >= 0 {
					b = append(b, digits[i])
				} else {
					b = append(b, ' ')
				}
			}
			b = append(trimRight(b), '\n')
		}
		k := group[0]
		for u, src := range g.units {
			row.load(u)
			ns := ""
			if u == 0 || src.ns != g.units[u-1].ns {
				ns = src.ns
			}
			b = fmt.Appendf(b, "%-*s %*d %-*s  ", nsWidth, ns, numWidth, u+1, nameWidth, names[u])
			for v := range g.units {
				if v > 0 && g.units[v].ns != g.units[v-1].ns {
					b = append(b, ' ')
				}
				b = append(b, marks.mark(row.at(v, k)))
			}
			b = append(b, '\n')
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	b = append(b, '\n')
	b = append(b, summary...)
	b = append(b, '\n')
	_, err := w.Write(b)
	return err
}

func trimRight(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// shortNames names each unit for the text table: a pod made by a
// Deployment without its template hash, unless that makes two pods of a
// namespace look alike; a workload by its kind/name.
func shortNames(g *grid, pods []*state.Pod) []string {
	out := make([]string, len(g.units))
	if g.byWorkload {
		for u, x := range g.units {
			out[u] = x.name
		}
		return out
	}
	seen := map[string]int{} // namespace/short name -> times
	for u, x := range g.units {
		out[u] = shortPodName(pods[x.pods[0]])
		seen[x.ns+"/"+out[u]]++
	}
	for u, x := range g.units {
		if seen[x.ns+"/"+out[u]] > 1 {
			out[u] = x.name
		}
	}
	return out
}

// shortPodName is web-*-x2k9p for web-7d4b9c8f6d-x2k9p, a pod whose
// pod-template-hash label is 7d4b9c8f6d: the hash is the same on every
// replica and tells a reader nothing.
func shortPodName(p *state.Pod) string {
	hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if hash == "" {
		return p.Name
	}
	if i := strings.LastIndex(p.Name, "-"+hash+"-"); i > 0 {
		return p.Name[:i] + "-*-" + p.Name[i+len(hash)+2:]
	}
	return p.Name
}
