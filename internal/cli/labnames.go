package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/words"
)

// nameProbeRow is one connection to a name as printed.
type nameProbeRow struct {
	From      string `json:"from"`
	Name      string `json:"name"`
	Addr      string `json:"addr"`
	To        string `json:"to"`
	Port      string `json:"port"`
	Kernel    string `json:"kernel"`
	Predicted string `json:"predicted"`
	Mismatch  bool   `json:"mismatch,omitempty"`
}

// probeNames has every pod resolve every name of the lab's DNS zone and
// connect to the answer (lab.ProbeNames), and compares each connection with
// netpol explain --to ADDRESS --resolved-as NAMES, where NAMES are the
// names the address was an answer for so far: in the kernel, an address an
// answer taught stays allowed by a rule naming it until the TTL expires.
func probeNames(cmd *cobra.Command, l *lab.Lab, e *engine.Engine, ports []l4.Port, output string) error {
	if output != "text" && output != "json" {
		return usageError{fmt.Errorf("--output %q: want text or json", output)}
	}
	if len(l.Zone) == 0 {
		return usageError{fmt.Errorf("lab %s has no DNS zone: give the manifests a ConfigMap kube-system/lab-dns and a Service kube-system/kube-dns", l.Name)}
	}
	cells := l.ProbeNames(ports)
	answered := lab.Answered{}
	rows := make([]nameProbeRow, 0, len(cells))
	bad := 0
	for _, c := range cells {
		if e.Cluster().Pod(c.From) == nil {
			continue // a host outside the cluster (lab.OutsideAnnotation): nothing to predict
		}
		r := nameProbeRow{From: c.From, Name: c.Name, To: c.To, Port: c.Port.String(), Kernel: verdictWord(c.Observed, c.Err)}
		if c.Err != nil {
			r.Predicted, r.Mismatch = "not compared", true
			bad++
			rows = append(rows, r)
			continue
		}
		r.Addr = c.Addr.String()
		answered.Add(c)
		_, v, err := answered.Predict(e, c.From, c.Addr, c.Port)
		if err != nil {
			return err
		}
		r.Predicted = verdictWord(v.Allowed, nil)
		if v.Allowed != c.Observed {
			r.Mismatch = true
			bad++
		}
		rows = append(rows, r)
	}
	if err := writeNameProbe(cmd.OutOrStdout(), output, rows, bad); err != nil {
		return err
	}
	if bad > 0 {
		return errSilent{fmt.Errorf("%d mismatches", bad)}
	}
	return nil
}

func writeNameProbe(w io.Writer, output string, rows []nameProbeRow, bad int) error {
	if output == "json" {
		return writeJSON(w, map[string]any{"connections": rows, "probed": len(rows), "mismatches": bad})
	}
	writeProbeTable(w, []string{"FROM", "NAME", "ADDRESS", "POD", "PORT", "KERNEL", "PREDICTED"}, len(rows), func(i int) ([]string, bool) {
		r := rows[i]
		return []string{r.From, r.Name, r.Addr, r.To, r.Port, r.Kernel, r.Predicted}, r.Mismatch
	})
	fmt.Fprintf(w, "\n%s to names probed, %s\n", words.Count(len(rows), "connection"), words.CountAs(bad, "mismatch", "mismatches"))
	return nil
}
