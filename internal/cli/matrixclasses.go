package cli

import (
	"encoding/json"
	"io"
	"strconv"

	"github.com/netpol/netpol/internal/diff"
	"github.com/netpol/netpol/internal/l4"
)

// writeClassesJSON writes the class view (-o json --classes): the ports
// decided, the behaviour classes with their pods, and for every class the
// classes it can reach, grouped by the ports allowed (in NetworkPolicy
// spelling): most classes reach most others alike, so a line per source
// class lists destination classes, not pairs, and the view of 10,000 pods
// in 3,000 classes stays tens of megabytes. One object per line, written as
// decided:
//
//	{
//	"ports": [{"protocol":"TCP","port":1,"endPort":65535}, ...],
//	"classes": [
//	{"class":0,"pods":["a/client"]},
//	...
//	],
//	"verdicts": [
//	{"from":0,"to":[{"classes":[1,2],"allowed":[{"protocol":"TCP","port":80}]},{"classes":[3],"allowed":[]}]},
//	...
//	]
//	}
//
// Every class appears once in a source's groups, but a class of one pod
// towards itself, which has no verdict (a pod always reaches itself).
func writeClassesJSON(w io.Writer, rows *classRows, ports []l4.Range) error {
	cm := rows.cm
	f := newPortFolder(ports)
	var b []byte
	b = append(b, "{\n\"ports\": "...)
	b = appendRanges(b, f.ranges(func(int) bool { return true }))
	b = append(b, ",\n\"classes\": ["...)
	members := make([][]string, cm.Classes())
	for i, p := range cm.Pods {
		members[cm.Class[i]] = append(members[cm.Class[i]], p.Key())
	}
	for c, pods := range members {
		if c > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n{\"class\":"...)
		b = strconv.AppendInt(b, int64(c), 10)
		b = append(b, ",\"pods\":"...)
		data, err := json.Marshal(pods)
		if err != nil {
			return err
		}
		b = append(b, data...)
		b = append(b, '}')
	}
	b = append(b, "\n],\n\"verdicts\": ["...)
	n := len(cm.Ports)
	var buf bits
	var groups [][]int        // destination classes by the ports they are allowed
	index := map[string]int{} // the allowed ports, as bits, -> group
	var key []byte
	for c := range cm.Classes() {
		row := rows.once(c, &buf)
		groups = groups[:0]
		clear(index)
		for d := range cm.Classes() {
			if !cm.Paired(c, d) {
				continue
			}
			key = key[:0]
			for k := 0; k < n; k += 8 {
				var x byte
				for i := k; i < min(k+8, n); i++ {
					if row.has(d*n + i) {
						x |= 1 << (i - k)
					}
				}
				key = append(key, x)
			}
			g, ok := index[string(key)]
			if !ok {
				g = len(groups)
				index[string(key)] = g
				groups = append(groups, nil)
			}
			groups[g] = append(groups[g], d)
		}
		if c > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n{\"from\":"...)
		b = strconv.AppendInt(b, int64(c), 10)
		b = append(b, ",\"to\":["...)
		for gi, dsts := range groups {
			if gi > 0 {
				b = append(b, ',')
			}
			b = append(b, "{\"classes\":["...)
			for i, d := range dsts {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(d), 10)
			}
			b = append(b, "],\"allowed\":"...)
			d := dsts[0]
			b = appendRanges(b, f.ranges(func(k int) bool { return row.has(d*n + k) }))
			b = append(b, '}')
		}
		b = append(b, "]}"...)
		if _, err := w.Write(b); err != nil {
			return err
		}
		b = b[:0]
	}
	b = append(b, "\n]\n}\n"...)
	_, err := w.Write(b)
	return err
}

// appendRanges appends ranges as a JSON array of diff.PortRange.
func appendRanges(b []byte, ranges []l4.Range) []byte {
	b = append(b, '[')
	for i, r := range ranges {
		if i > 0 {
			b = append(b, ',')
		}
		data, _ := diff.PortRange{Range: r}.MarshalJSON() // three numbers and a protocol name: cannot fail
		b = append(b, data...)
	}
	return append(b, ']')
}
