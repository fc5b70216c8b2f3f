package suggest

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/observed"
)

// ReadFlows reads observed flows in one of four forms, told apart by how
// they begin:
//
//   - CSV: from,to,port[,count], with or without a header line
//     ("from,to,port,count"); port as 8080/tcp (TCP when left out);
//   - a JSON array of {"from", "to", "port", "protocol", "count"}, port a
//     number or a string as in CSV, protocol beside it as the Kubernetes
//     API writes one ("TCP" when neither says);
//   - the JSON of `netpol lab probe -o json` (one object with "flows"):
//     its allowed flows;
//   - the agent's record file: JSON lines, one object per line,
//     {"from","to","port","verdict","count","first","last","node"}; lines
//     with verdict "deny" are connections the policies refused, not
//     traffic to allow: they are skipped, and denied counts them.
//
// From and to are pods (namespace/name), workloads (namespace/Kind/name)
// or addresses. Flows equal in from, to and port are merged, their counts
// summed, so that a policy's annotation lists each once. Errors name the
// line (the element of a JSON array). A port given by name is an error
// here: Ends.ReadFlows resolves names against the destination's pods.
func ReadFlows(data []byte) (flows []Flow, denied int, err error) {
	return readFlows(data, nil)
}

// ReadFlows is the package's ReadFlows with port names resolved: a flow
// to "shop/db-0" on "postgres" is on the port db-0 declares by that name
// (of the protocol given, when one is). Every pod the destination names
// must declare the name alike.
func (e *Ends) ReadFlows(data []byte) (flows []Flow, denied int, err error) {
	return readFlows(data, e)
}

func readFlows(data []byte, named *Ends) (flows []Flow, denied int, err error) {
	trimmed := bytes.TrimSpace(data)
	var m merger
	p := parser{ports: map[portText]l4.Port{}, named: named}
	switch {
	case len(trimmed) == 0:
		return nil, 0, nil
	case trimmed[0] == '[':
		var rows []jsonFlow
		if err := json.Unmarshal(trimmed, &rows); err != nil {
			return nil, 0, fmt.Errorf("flows (JSON): %w", err)
		}
		err = p.fromJSON(&m, rows, false)
	case trimmed[0] == '{':
		var probe bool
		if probe, err = isProbe(data); err == nil && probe {
			var doc struct {
				Flows []jsonFlow `json:"flows"`
			}
			if err := json.Unmarshal(trimmed, &doc); err != nil {
				return nil, 0, fmt.Errorf("flows (lab probe JSON): %w", err)
			}
			err = p.fromJSON(&m, doc.Flows, true)
		} else if err == nil {
			denied, err = p.records(&m, data)
		}
	default:
		err = p.csv(&m, data)
	}
	if err != nil {
		return nil, 0, err
	}
	return m.out, denied, nil
}

// Merge merges flows equal in from, to and port (the flows of several
// record files: each node records its own pods' connections, and a flow
// between two nodes' pods is in both files), summing their counts, in the
// order they first appear.
func Merge(flows []Flow) []Flow {
	var m merger
	for _, f := range flows {
		m.add(f)
	}
	return m.out
}

// merger merges flows as they come.
type merger struct {
	at  map[flowKey]int // index in out
	out []Flow
}

type flowKey struct {
	from, to string
	port     l4.Port
}

func (m *merger) add(f Flow) {
	if m.at == nil {
		m.at = map[flowKey]int{}
	}
	k := flowKey{f.From, f.To, f.Port}
	if i, ok := m.at[k]; ok {
		m.out[i].Count = observed.Sum(m.out[i].Count, f.Count)
		// A flow written by hand names its ends itself.
		m.out[i].Recorded = m.out[i].Recorded && f.Recorded
		return
	}
	m.at[k] = len(m.out)
	m.out = append(m.out, f)
}

// isProbe tells the lab probe's JSON (one object with "flows") from a
// record file (objects, one a line), by the keys of the first object.
func isProbe(data []byte) (bool, error) {
	var first map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&first); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return false, fmt.Errorf("flows line %d: %w", bytes.Count(data[:syntax.Offset], []byte("\n"))+1, err)
		}
		return false, fmt.Errorf("flows (JSON): %w", err)
	}
	_, ok := first["flows"]
	return ok, nil
}

// parser turns the fields of one flow into a Flow. It keeps the ports it
// has parsed: a record file of a million lines names a few dozen.
type parser struct {
	ports map[portText]l4.Port
	named *Ends // resolves port names; nil: a name is an error
}

// portText is a port as a flow wrote it: numbers are the same port to
// every destination, a name is a port of its destination's pods.
type portText struct{ to, port, protocol string }

func (p *parser) csv(m *merger, data []byte) error {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	for first := true; ; first = false {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("flows (CSV): %w", err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a line of spaces
		}
		if first && strings.EqualFold(rec[0], "from") {
			continue // the header
		}
		if len(rec) < 3 || len(rec) > 4 {
			return fmt.Errorf("flows line %d: %d fields, want from,to,port[,count]", line, len(rec))
		}
		count := 1
		if len(rec) == 4 {
			if count, err = strconv.Atoi(rec[3]); err != nil || count < 1 {
				return fmt.Errorf("flows line %d: count %q: want a positive number", line, rec[3])
			}
		}
		f, err := p.flow(rec[0], rec[1], rec[2], "", count)
		if err != nil {
			return fmt.Errorf("flows line %d: %w", line, err)
		}
		m.add(f)
	}
}

type jsonFlow struct {
	From     string       `json:"from"`
	To       string       `json:"to"`
	Port     l4.PortValue `json:"port"`
	Protocol string       `json:"protocol"`
	Count    int          `json:"count"`
	Kernel   string       `json:"kernel"` // lab probe: "allowed", "denied", "error: ..."
	DstIP    string       `json:"dstIP"`  // lab probe: the address probed
}

func (p *parser) fromJSON(m *merger, rows []jsonFlow, probe bool) error {
	for i, row := range rows {
		if probe && row.Kernel != "allowed" {
			continue // only what the kernel let through was observed
		}
		to := row.To
		if probe && row.DstIP != "" {
			to = row.DstIP // the family the probe took
		}
		f, err := p.flow(row.From, to, string(row.Port), row.Protocol, max(row.Count, 1))
		if err != nil {
			return fmt.Errorf("flows[%d]: %w", i, err)
		}
		m.add(f)
	}
	return nil
}

// records reads a record file, line by line; it returns how many lines
// were denied connections.
func (p *parser) records(m *merger, data []byte) (denied int, err error) {
	for line := 1; len(data) > 0; line++ {
		text := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		var r observed.Flow
		if err := json.Unmarshal(text, &r); err != nil {
			return 0, fmt.Errorf("flows line %d: %w", line, err)
		}
		if err := r.Check(); err != nil {
			return 0, fmt.Errorf("flows line %d: %w", line, err)
		}
		if r.Verdict == observed.Deny {
			denied++
			continue
		}
		// The agent writes numbers: a name here is no record of it.
		k := portText{port: r.Port}
		pt, ok := p.ports[k]
		if !ok {
			if pt, err = observed.ParsePort(r.Port); err != nil {
				return 0, fmt.Errorf("flows line %d: %w", line, err)
			}
			p.ports[k] = pt
		}
		f := Flow{From: r.From, To: r.To, Port: pt, Count: r.Count, Recorded: true}
		m.add(f)
	}
	return denied, nil
}

func (p *parser) flow(from, to, port, protocol string, count int) (Flow, error) {
	if from == "" || to == "" {
		return Flow{}, fmt.Errorf("a flow needs from and to")
	}
	k := portText{port: port, protocol: protocol}
	pt, ok := p.ports[k]
	if !ok {
		spec, err := l4.ParsePortProto(port, protocol, "protocol")
		if err != nil {
			return Flow{}, err
		}
		if spec.Name != "" {
			k.to = to // a name is its destination's
			if pt, ok = p.ports[k]; !ok {
				if p.named == nil {
					return Flow{}, fmt.Errorf("port %q: a port name needs the destination's pods; name the port by number", spec)
				}
				if pt, err = p.named.NamedPort(to, spec); err != nil {
					return Flow{}, err
				}
			}
		} else {
			pt = l4.Port{Proto: cmp.Or(spec.Proto, l4.TCP), Num: spec.Num}
		}
		p.ports[k] = pt
	}
	return Flow{From: from, To: to, Port: pt, Count: count}, nil
}
