package suggest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/l4"
)

// ReadFlows reads observed flows in one of three forms, told apart by the
// first character:
//
//   - CSV: from,to,port[,count], with or without a header line
//     ("from,to,port,count"); port as 8080/tcp (TCP when left out);
//   - a JSON array of {"from", "to", "port", "count"};
//   - the JSON of `netpol lab probe -o json`: its allowed flows.
//
// From and to are pods (namespace/name) or addresses. Errors name the line
// or the element.
func ReadFlows(data []byte) ([]Flow, error) {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		return nil, nil
	case trimmed[0] == '[':
		var rows []jsonFlow
		if err := json.Unmarshal(trimmed, &rows); err != nil {
			return nil, fmt.Errorf("flows (JSON): %w", err)
		}
		return fromJSON(rows, false)
	case trimmed[0] == '{':
		var probe struct {
			Flows []jsonFlow `json:"flows"`
		}
		if err := json.Unmarshal(trimmed, &probe); err != nil {
			return nil, fmt.Errorf("flows (lab probe JSON): %w", err)
		}
		return fromJSON(probe.Flows, true)
	}
	r := csv.NewReader(bytes.NewReader(trimmed))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	var out []Flow
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("flows (CSV): %w", err)
		}
		if line == 1 && strings.EqualFold(rec[0], "from") {
			continue // the header
		}
		if len(rec) < 3 || len(rec) > 4 {
			return nil, fmt.Errorf("flows line %d: %d fields, want from,to,port[,count]", line, len(rec))
		}
		count := "1"
		if len(rec) == 4 {
			count = rec[3]
		}
		f, err := flow(rec[0], rec[1], rec[2], count)
		if err != nil {
			return nil, fmt.Errorf("flows line %d: %w", line, err)
		}
		out = append(out, f)
	}
}

type jsonFlow struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Port   string `json:"port"`
	Count  int    `json:"count"`
	Kernel string `json:"kernel"` // lab probe: "allowed", "denied", "error: ..."
	DstIP  string `json:"dstIP"`  // lab probe: the address probed
}

func fromJSON(rows []jsonFlow, probe bool) ([]Flow, error) {
	var out []Flow
	for i, row := range rows {
		if probe && row.Kernel != "allowed" {
			continue // only what the kernel let through was observed
		}
		to := row.To
		if probe && row.DstIP != "" {
			to = row.DstIP // the family the probe took
		}
		count := strconv.Itoa(max(row.Count, 1))
		f, err := flow(row.From, to, row.Port, count)
		if err != nil {
			return nil, fmt.Errorf("flows[%d]: %w", i, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func flow(from, to, port, count string) (Flow, error) {
	if from == "" || to == "" {
		return Flow{}, fmt.Errorf("a flow needs from and to")
	}
	ps, err := l4.ParsePortList(port)
	if err != nil || len(ps) != 1 {
		return Flow{}, fmt.Errorf("port %q: want one port, as 8080/tcp", port)
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return Flow{}, fmt.Errorf("count %q: want a positive number", count)
	}
	return Flow{From: from, To: to, Port: ps[0], Count: n}, nil
}
