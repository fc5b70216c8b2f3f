package cli

import (
	"io"
	"strconv"

	"github.com/netpol/netpol/internal/diff"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/jsontext"
	"github.com/netpol/netpol/internal/l4"
)

// writeClassSidesJSON writes the class view (-o json --classes) as the
// kernel is told it: the ports decided; the sets of classes that rules
// match, as runs [first,last]; the answers, each a step of a side towards
// every class (its rules in order, each with its outcome, ports in
// NetworkPolicy spelling, set and name, and the rest for what none
// matches); and the behaviour classes with their pods and the steps of
// their two sides. In a step the first rule whose ports hold the port and
// whose set holds the peer decides; the first step that does not answer
// Next decides the side, and after the last the default allows. Class c
// reaches class d when c's egress steps allow d and d's ingress steps
// allow c; a class of one pod reaches itself (the pod itself). Its size
// follows the policies, not the pairs of classes. One object per line:
//
//	{
//	"ports": [{"protocol":"TCP","port":1,"endPort":65535}, ...],
//	"sets": [
//	{"set":0,"classes":[[0,3],[7,7]]},
//	...
//	],
//	"answers": [
//	{"answer":0,"tier":"NetworkPolicy","rest":"Deny","rules":[{"outcome":"Accept","ports":[{"protocol":"TCP","port":80}],"set":0,"policy":"NetworkPolicy/shop/web","rule":"ingress[0]"}]},
//	...
//	],
//	"classes": [
//	{"class":0,"pods":["a/client"],"egress":[],"ingress":[0]},
//	...
//	]
//	}
func writeClassSidesJSON(w io.Writer, s *engine.Sides, ports []l4.Range) error {
	f := newPortFolder(ports)
	var b []byte
	flush := func() error {
		_, err := w.Write(b)
		b = b[:0]
		return err
	}
	// spill writes what is held once it passes 32 KiB: the output streams
	// in large writes, and memory stays flat.
	spill := func() error {
		if len(b) < 32<<10 {
			return nil
		}
		return flush()
	}
	b = append(b, "{\n\"ports\": "...)
	b = appendRanges(b, f.ranges(func(int) bool { return true }))
	b = append(b, ",\n\"sets\": ["...)
	for i, runs := range s.Sets {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n{\"set\":"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ",\"classes\":"...)
		b = appendRuns(b, runs)
		b = append(b, '}')
		if err := spill(); err != nil {
			return err
		}
	}
	b = append(b, "\n],\n\"answers\": ["...)
	for i, a := range s.Answers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n{\"answer\":"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ",\"tier\":"...)
		b = strconv.AppendQuote(b, a.Tier)
		b = append(b, ",\"rest\":"...)
		b = strconv.AppendQuote(b, a.Rest.String())
		b = append(b, ",\"rules\":["...)
		for ri, r := range a.Rules {
			if ri > 0 {
				b = append(b, ',')
			}
			b = append(b, "{\"outcome\":"...)
			b = strconv.AppendQuote(b, r.Outcome.String())
			b = append(b, ",\"ports\":"...)
			b = appendRanges(b, f.ranges(func(k int) bool { return r.Ports[k/64]&(1<<(k%64)) != 0 }))
			b = append(b, ",\"set\":"...)
			b = strconv.AppendInt(b, int64(r.Set), 10)
			if r.Policy != nil {
				b = append(b, ",\"policy\":"...)
				b = appendString(b, r.Policy.String())
			}
			b = append(b, ",\"rule\":"...)
			b = appendString(b, r.Rule)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
		if err := spill(); err != nil {
			return err
		}
	}
	b = append(b, "\n],\n\"classes\": ["...)
	var err error
	eachClassPods(s.ClassMatrix, func(c int, pods []string) bool {
		if c > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n{\"class\":"...)
		b = strconv.AppendInt(b, int64(c), 10)
		b = append(b, ",\"pods\":"...)
		b = appendStrings(b, pods)
		for _, side := range [...]struct {
			name  string
			steps []int32
		}{{"egress", s.Egress[c]}, {"ingress", s.Ingress[c]}} {
			b = append(b, ",\""+side.name+"\":["...)
			for i, a := range side.steps {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(a), 10)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
		err = spill()
		return err == nil
	})
	if err != nil {
		return err
	}
	b = append(b, "\n]\n}\n"...)
	return flush()
}

// appendRuns appends class runs as a JSON array of [first,last] pairs.
func appendRuns(b []byte, runs []engine.ClassRun) []byte {
	b = append(b, '[')
	for i, r := range runs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(r.First), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.Last), 10)
		b = append(b, ']')
	}
	return append(b, ']')
}

// eachClassPods calls f with each class and the keys of its pods, in
// class order, until f returns false.
func eachClassPods(cm *engine.ClassMatrix, f func(c int, pods []string) bool) {
	members := make([][]string, cm.Classes())
	for i, p := range cm.Pods {
		members[cm.Class[i]] = append(members[cm.Class[i]], p.Key())
	}
	for c, pods := range members {
		if !f(c, pods) {
			return
		}
	}
}

// appendString appends a JSON string.
func appendString(b []byte, str string) []byte {
	data, _ := jsontext.Marshal(str) // a string cannot fail to marshal
	return append(b, data...)
}

// appendStrings appends a JSON array of strings.
func appendStrings(b []byte, ss []string) []byte {
	data, _ := jsontext.Marshal(ss) // strings cannot fail to marshal
	return append(b, data...)
}

// writeClassPairsJSON writes the class view as pairs (-o json --classes
// --pairs): the ports
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
func writeClassPairsJSON(w io.Writer, rows *classRows, ports []l4.Range) error {
	cm := rows.cm
	f := newPortFolder(ports)
	var b []byte
	b = append(b, "{\n\"ports\": "...)
	b = appendRanges(b, f.ranges(func(int) bool { return true }))
	b = append(b, ",\n\"classes\": ["...)
	eachClassPods(cm, func(c int, pods []string) bool {
		if c > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n{\"class\":"...)
		b = strconv.AppendInt(b, int64(c), 10)
		b = append(b, ",\"pods\":"...)
		b = appendStrings(b, pods)
		b = append(b, '}')
		return true
	})
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
