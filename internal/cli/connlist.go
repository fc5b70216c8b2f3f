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
	var all, some []byte
	for u, src := range g.units {
		g.row(g.enforced, u, cells)
		for v, dst := range g.units {
			if u == v && len(src.pods) == 1 {
				continue
			}
			row := cells[v*n : (v+1)*n]
			all = f.appendFold(all[:0], func(k int) bool { return row[k] == cellAllowed })
			some = f.appendFold(some[:0], func(k int) bool { return row[k] == cellMixed })
			if len(all) == 0 && len(some) == 0 {
				continue
			}
			b = pad(b, src.key())
			b = pad(b, dst.key())
			switch {
			case len(some) == 0:
				b = append(b, all...)
			case len(all) == 0:
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

// protoNames are the protocols as the lists spell them, made once: a
// connection list spells millions.
var protoNames = func() map[l4.Protocol]string {
	m := map[l4.Protocol]string{}
	for _, p := range l4.Protocols {
		m[p] = strings.ToLower(p.String())
	}
	return m
}()

// portFolder spells sets of ranges of a port dimension.
type portFolder struct {
	ports []l4.Range
	order []int // indexes of ports by protocol, then number
	// whole: the dimension covers every port of every protocol, so that
	// everything allowed is "all".
	whole   bool
	scratch []l4.Range
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
// joined: 80/tcp, 81/tcp and 82/tcp make 80-82/tcp. The slice is valid
// until the next call: a connection list folds millions of pairs.
func (f *portFolder) ranges(pick func(k int) bool) []l4.Range {
	out := f.scratch[:0]
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
	f.scratch = out
	return out
}

// appendFold appends the picked ports to b, spelt "tcp 80-82,443; udp
// 53", "tcp all" for every port of a protocol, "all" for every port of
// every protocol; nothing for none.
func (f *portFolder) appendFold(b []byte, pick func(k int) bool) []byte {
	rs := f.ranges(pick)
	every := 0
	for _, r := range rs {
		if r.First <= 1 && r.Last == 65535 {
			every++
		}
	}
	if f.whole && every == len(l4.Protocols) && len(rs) == every {
		return append(b, "all"...)
	}
	for i, r := range rs {
		if i == 0 || rs[i-1].Proto != r.Proto {
			if i > 0 {
				b = append(b, "; "...)
			}
			b = append(b, protoNames[r.Proto]...)
			b = append(b, ' ')
		} else {
			b = append(b, ',')
		}
		switch {
		case r.First <= 1 && r.Last == 65535:
			b = append(b, "all"...)
		case r.First == r.Last:
			b = strconv.AppendInt(b, int64(r.First), 10)
		default:
			b = strconv.AppendInt(b, int64(r.First), 10)
			b = append(b, '-')
			b = strconv.AppendInt(b, int64(r.Last), 10)
		}
	}
	return b
}
