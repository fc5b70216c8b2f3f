package cli

import (
	"github.com/netpol/netpol/internal/escape"
	"github.com/netpol/netpol/internal/jsontext"
	"io"
	"strconv"
	"strings"
)

// The cell formats, json and csv, write one record per row, column and
// port, row by row as the grid decides them.

// cellWriter writes one record: from and to index the grid's units.
type cellWriter interface {
	cell(from, to int, port portLabel, now, staged cell) error
}

// portLabel is a decided port as the cell formats spell it.
type portLabel struct {
	num   int
	proto string
}

// writeCells walks the grid in row order and hands every cell to cw.
func writeCells(g *grid, cw cellWriter) error {
	n := len(g.ports)
	labels := make([]portLabel, n)
	for k, r := range g.ports {
		labels[k] = portLabel{int(r.First), r.Proto.String()}
	}
	row := g.rowCells()
	for u := range g.units {
		row.load(u)
		for v := range g.units {
			for k := range n {
				now, staged := row.at(v, k)
				if err := cw.cell(u, v, labels[k], now, staged); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// csvCells writes from,to,port,protocol,allowed[,mixed][,staged], quoting
// a name as RFC 4180 does when it needs it (a Kubernetes name never does,
// a hand-written manifest might).
type csvCells struct {
	w          io.Writer
	buf        []byte
	byWorkload bool
	names      []string // the units' keys as CSV fields
}

func newCSVCells(w io.Writer, g *grid) (*csvCells, error) {
	c := &csvCells{w: w, byWorkload: g.byWorkload, names: make([]string, len(g.units))}
	for u, x := range g.units {
		c.names[u] = x.key()
		if strings.ContainsAny(c.names[u], ",\"\r\n") {
			c.names[u] = `"` + strings.ReplaceAll(c.names[u], `"`, `""`) + `"`
		}
	}
	header := "from,to,port,protocol,allowed"
	if g.byWorkload {
		header += ",mixed"
	}
	if g.staged != nil {
		header += ",staged"
	}
	_, err := io.WriteString(w, header+"\n")
	return c, err
}

func (c *csvCells) cell(from, to int, port portLabel, now, staged cell) error {
	b := append(c.buf[:0], c.names[from]...)
	b = append(b, ',')
	b = append(b, c.names[to]...)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(port.num), 10)
	b = append(b, ',')
	b = append(b, port.proto...)
	b = append(b, ',')
	b = strconv.AppendBool(b, now == cellAllowed)
	if c.byWorkload {
		b = append(b, ',')
		b = strconv.AppendBool(b, now == cellMixed)
	}
	if staged != 0 {
		b = append(b, ',')
		b = strconv.AppendBool(b, staged == cellAllowed)
	}
	b = append(b, '\n')
	c.buf = b
	_, err := c.w.Write(b)
	return err
}

// jsonCells writes a JSON array, one object per line:
// {"from":..,"to":..,"port":80,"protocol":"TCP","allowed":true}, with
// "mixed":true where the pods of two workloads disagree and "staged" with
// --staged. It is written as it goes, so it is valid JSON only once
// finish has closed it.
type jsonCells struct {
	w     io.Writer
	buf   []byte
	names [][]byte // the units' keys as JSON strings
	first bool
}

func newJSONCells(w io.Writer, g *grid) (*jsonCells, error) {
	j := &jsonCells{w: w, names: make([][]byte, len(g.units)), first: true}
	for u, x := range g.units {
		j.names[u], _ = jsontext.Marshal(x.key()) // a string: cannot fail
	}
	_, err := io.WriteString(w, "[")
	return j, err
}

func (j *jsonCells) cell(from, to int, port portLabel, now, staged cell) error {
	b := j.buf[:0]
	if !j.first {
		b = append(b, ',')
	}
	j.first = false
	b = append(b, "\n{\"from\":"...)
	b = append(b, j.names[from]...)
	b = append(b, ",\"to\":"...)
	b = append(b, j.names[to]...)
	b = append(b, ",\"port\":"...)
	b = strconv.AppendInt(b, int64(port.num), 10)
	b = append(b, ",\"protocol\":\""...)
	b = append(b, port.proto...)
	b = append(b, "\",\"allowed\":"...)
	b = strconv.AppendBool(b, now == cellAllowed)
	if now == cellMixed {
		b = append(b, ",\"mixed\":true"...)
	}
	if staged != 0 {
		b = append(b, ",\"staged\":"...)
		b = strconv.AppendBool(b, staged == cellAllowed)
	}
	b = append(b, '}')
	j.buf = b
	_, err := j.w.Write(b)
	return err
}

func (j *jsonCells) finish() error {
	_, err := io.WriteString(j.w, "\n]\n")
	return err
}

// writeMatrixMarkdown writes one table per group of ports whose tables
// are identical, rows and columns named in full.
func writeMatrixMarkdown(w io.Writer, g *grid, marks marker) error {
	row := g.rowCells()
	var b []byte
	for gi, group := range portGroups(len(g.ports), g.classRows()...) {
		if gi > 0 {
			b = append(b, '\n')
		}
		b = append(b, "**"...)
		b = append(b, groupTitle(g, group)...)
		b = append(b, "**   ("...)
		b = append(b, marks.legend()...)
		b = append(b, ")\n\n| from \\ to |"...)
		for _, dst := range g.units {
			b = append(b, ' ')
			b = append(b, escape.Markdown(dst.key())...)
			b = append(b, " |"...)
		}
		b = append(b, "\n|---|"...)
		b = append(b, strings.Repeat("---|", len(g.units))...)
		b = append(b, '\n')
		k := group[0]
		for u, src := range g.units {
			row.load(u)
			b = append(b, "| "...)
			b = append(b, escape.Markdown(src.key())...)
			b = append(b, " |"...)
			for v := range g.units {
				b = append(b, ' ', marks.mark(row.at(v, k)), ' ', '|')
			}
			b = append(b, '\n')
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}

// groupTitle names a group of ports: "80/tcp, 443/tcp".
func groupTitle(g *grid, group []int) string {
	s := make([]string, len(group))
	for i, k := range group {
		s[i] = g.ports[k].String()
	}
	return strings.Join(s, ", ")
}

// marker is how the table formats draw a cell.
type marker struct {
	staged, byWorkload bool
}

// mark is '.' allowed, 'X' denied, '~' mixed; with --staged, '!' allowed
// but would be denied, '+' denied but would be allowed.
func (m marker) mark(now, staged cell) byte {
	if staged != 0 && staged != now {
		if now == cellAllowed {
			return '!'
		}
		return '+'
	}
	switch now {
	case cellAllowed:
		return '.'
	case cellMixed:
		return '~'
	}
	return 'X'
}

func (m marker) legend() string {
	s := ". allowed, X denied"
	if m.byWorkload {
		s += ", ~ some pairs of their pods allowed and some denied"
	}
	if m.staged {
		s += "; staged: ! would be denied, + would be allowed"
	}
	return s
}
