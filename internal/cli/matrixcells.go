package cli

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// The cell formats, json and csv, write one record per row, column and
// port, row by row as the grid decides them.

// cellWriter writes one record.
type cellWriter interface {
	cell(from, to string, port portLabel, now, staged cell) error
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
	for u, src := range g.units {
		row.load(u)
		from := src.key()
		for v, dst := range g.units {
			to := dst.key()
			for k := range n {
				now, staged := row.at(v, k)
				if err := cw.cell(from, to, labels[k], now, staged); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// csvCells writes from,to,port,protocol,allowed[,mixed][,staged]. Names
// are Kubernetes names (no commas, quotes or line breaks) and written as
// they are.
type csvCells struct {
	w          io.Writer
	buf        []byte
	byWorkload bool
}

func newCSVCells(w io.Writer, g *grid) (*csvCells, error) {
	header := "from,to,port,protocol,allowed"
	if g.byWorkload {
		header += ",mixed"
	}
	if g.staged != nil {
		header += ",staged"
	}
	_, err := io.WriteString(w, header+"\n")
	return &csvCells{w: w, byWorkload: g.byWorkload}, err
}

func (c *csvCells) cell(from, to string, port portLabel, now, staged cell) error {
	b := append(c.buf[:0], from...)
	b = append(b, ',')
	b = append(b, to...)
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
	w      io.Writer
	buf    []byte
	quoted map[string][]byte // names as JSON strings, made once
	first  bool
}

func newJSONCells(w io.Writer) (*jsonCells, error) {
	_, err := io.WriteString(w, "[")
	return &jsonCells{w: w, quoted: map[string][]byte{}, first: true}, err
}

func (j *jsonCells) quote(s string) []byte {
	q, ok := j.quoted[s]
	if !ok {
		q, _ = json.Marshal(s)
		j.quoted[s] = q
	}
	return q
}

func (j *jsonCells) cell(from, to string, port portLabel, now, staged cell) error {
	b := j.buf[:0]
	if !j.first {
		b = append(b, ',')
	}
	j.first = false
	b = append(b, "\n{\"from\":"...)
	b = append(b, j.quote(from)...)
	b = append(b, ",\"to\":"...)
	b = append(b, j.quote(to)...)
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
			b = append(b, dst.key()...)
			b = append(b, " |"...)
		}
		b = append(b, "\n|---|"...)
		b = append(b, strings.Repeat("---|", len(g.units))...)
		b = append(b, '\n')
		k := group[0]
		for u, src := range g.units {
			row.load(u)
			b = append(b, "| "...)
			b = append(b, src.key()...)
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
