package cli

import (
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/l4"
)

// writeConnList writes the connection list: for every pair of rows with
// something allowed, the allowed ports folded into ranges per protocol
// ("tcp 80-82,443; udp 53"). A pod towards itself is left out (always
// allowed). Between workloads whose pods disagree, the ports only some
// pairs of their pods may use follow in parentheses.
func writeConnList(w io.Writer, g *grid) error {
	width := len("FROM")
	for _, u := range g.units {
		width = max(width, len(u.key()))
	}
	pad := func(b []byte, s string) []byte {
		b = append(b, s...)
		return append(b, strings.Repeat(" ", width-len(s)+2)...)
	}
	b := pad(nil, "FROM")
	b = pad(b, "TO")
	b = append(b, "ALLOWED\n"...)
	f := newPortFolder(g.ports)
	n := len(g.ports)
	cells := make([]cell, len(g.units)*n)
	for u, src := range g.units {
		g.row(g.enforced, u, cells)
		for v, dst := range g.units {
			if u == v && src.pods == 1 {
				continue
			}
			row := cells[v*n : (v+1)*n]
			all := f.fold(func(k int) bool { return row[k] == cellAllowed })
			some := f.fold(func(k int) bool { return row[k] == cellMixed })
			if all == "" && some == "" {
				continue
			}
			b = pad(b, src.key())
			b = pad(b, dst.key())
			switch {
			case some == "":
				b = append(b, all...)
			case all == "":
				b = append(b, "some pod pairs: "...)
				b = append(b, some...)
			default:
				b = append(b, all...)
				b = append(b, " (some pod pairs: "...)
				b = append(b, some...)
				b = append(b, ')')
			}
			b = append(b, '\n')
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		b = b[:0]
	}
	return nil
}

// portFolder spells sets of ranges of a port dimension.
type portFolder struct {
	ports []l4.Range
	order []int // indexes of ports by protocol, then number
	// whole: the dimension covers every port of every protocol, so that
	// everything allowed is "all".
	whole bool
}

func newPortFolder(ports []l4.Range) *portFolder {
	f := &portFolder{ports: ports, order: make([]int, len(ports))}
	for k := range ports {
		f.order[k] = k
	}
	slices.SortStableFunc(f.order, func(a, b int) int {
		if ports[a].Proto != ports[b].Proto {
			return int(ports[a].Proto) - int(ports[b].Proto)
		}
		return int(ports[a].First) - int(ports[b].First)
	})
	covered := map[l4.Protocol]int{}
	for _, r := range ports {
		covered[r.Proto] += int(r.Last) - int(max(r.First, 1)) + 1
	}
	f.whole = true
	for _, p := range l4.Protocols {
		f.whole = f.whole && covered[p] == 65535
	}
	return f
}

// ranges folds the picked ports into ranges, adjacent ports of a protocol
// joined: 80/tcp, 81/tcp and 82/tcp make 80-82/tcp.
func (f *portFolder) ranges(pick func(k int) bool) []l4.Range {
	var out []l4.Range
	for _, k := range f.order {
		if !pick(k) {
			continue
		}
		r := f.ports[k]
		if n := len(out); n > 0 && out[n-1].Proto == r.Proto && int(out[n-1].Last)+1 >= int(r.First) {
			out[n-1].Last = max(out[n-1].Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	return out
}

// fold spells the picked ports: "tcp 80-82,443; udp 53", "tcp all" for
// every port of a protocol, "all" for every port of every protocol; ""
// for none.
func (f *portFolder) fold(pick func(k int) bool) string {
	rs := f.ranges(pick)
	if len(rs) == 0 {
		return ""
	}
	var b strings.Builder
	every := 0
	for i, r := range rs {
		first := i == 0 || rs[i-1].Proto != r.Proto
		if first {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(strings.ToLower(r.Proto.String()))
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		switch {
		case r.First <= 1 && r.Last == 65535:
			b.WriteString("all")
			every++
		case r.First == r.Last:
			b.WriteString(strconv.Itoa(int(r.First)))
		default:
			b.WriteString(strconv.Itoa(int(r.First)) + "-" + strconv.Itoa(int(r.Last)))
		}
	}
	if f.whole && every == len(l4.Protocols) && len(rs) == every {
		return "all"
	}
	return b.String()
}
