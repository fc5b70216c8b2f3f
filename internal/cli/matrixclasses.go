package cli

import (
	"encoding/json"
	"io"
	"strconv"

	"github.com/netpol/netpol/internal/diff"
	"github.com/netpol/netpol/internal/l4"
)

// writeClassesJSON writes the class view (-o json --classes): the ports
// decided, the behaviour classes with their pods, and the verdict of every
// class towards every class as the ports it allows, in NetworkPolicy
// spelling. Its size follows the number of classes, not pods squared.
// One object per line, written as decided:
//
//	{
//	"ports": [{"protocol":"TCP","port":1,"endPort":65535}, ...],
//	"classes": [
//	{"class":0,"pods":["a/client"]},
//	...
//	],
//	"verdicts": [
//	{"from":0,"to":1,"allowed":[{"protocol":"TCP","port":80}]},
//	...
//	]
//	}
//
// A class of one pod towards itself has no verdict (a pod always reaches
// itself).
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
	first := true
	var buf bits
	for c := range cm.Classes() {
		row := rows.once(c, &buf)
		for d := range cm.Classes() {
			if !cm.Paired(c, d) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, "\n{\"from\":"...)
			b = strconv.AppendInt(b, int64(c), 10)
			b = append(b, ",\"to\":"...)
			b = strconv.AppendInt(b, int64(d), 10)
			b = append(b, ",\"allowed\":"...)
			b = appendRanges(b, f.ranges(func(k int) bool { return row.has(d*n + k) }))
			b = append(b, '}')
		}
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
