package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/state"
)

// serviceProbeRow is one backend of one probed Service port, as printed.
type serviceProbeRow struct {
	From      string `json:"from"`
	Service   string `json:"service"`
	Port      string `json:"port"`
	Addr      string `json:"addr"`
	Backend   string `json:"backend"`
	Kernel    string `json:"kernel"`
	Predicted string `json:"predicted"`
	Mismatch  bool   `json:"mismatch,omitempty"`
}

// probeServices runs `lab probe --services`: every pod to every Service
// port of the lab, each backend's fate compared with DecideService.
func probeServices(cmd *cobra.Command, l *lab.Lab, e *engine.Engine, ports []l4.Port, output string) error {
	if output != "text" && output != "json" {
		return usageError{fmt.Errorf("--output %q: want text or json", output)}
	}
	if len(l.Services) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "lab %s has no Service with a cluster IP and backends among its pods\n", l.Name)
	}
	update, stop := probeProgress(cmd, "probing Services")
	cells := l.ProbeServices(cmd.Context(), ports, update)
	stop()
	var rows []serviceProbeRow
	bad := 0
	for _, c := range cells {
		predicted, err := lab.PredictService(e, c)
		for _, be := range c.Port.Backends {
			r := serviceProbeRow{From: c.From, Service: c.Service, Port: servicePortText(&state.ServicePort{Name: c.Port.Name, Port: c.Port.Port}), Addr: c.Addr.String(),
				Backend: be.Pod, Kernel: verdictWord(c.Reached[be.Pod], c.Err)}
			switch {
			case err != nil:
				r.Predicted, r.Mismatch = "error: "+err.Error(), true
			case be.Pod == c.From:
				r.Kernel, r.Predicted = "hairpin", "not compared"
			default:
				want, ok := predicted[be.Pod]
				r.Predicted = verdictWord(want, nil)
				if !ok {
					r.Predicted = "not a backend in the model"
				}
				r.Mismatch = c.Err != nil || !ok || want != c.Reached[be.Pod]
			}
			if r.Mismatch {
				bad++
			}
			rows = append(rows, r)
		}
	}
	if err := writeServiceProbe(cmd.OutOrStdout(), output, rows, bad); err != nil {
		return err
	}
	if bad > 0 {
		return errSilent{fmt.Errorf("%d mismatches", bad)}
	}
	return nil
}

func writeServiceProbe(w io.Writer, output string, rows []serviceProbeRow, bad int) error {
	if output == "json" {
		return writeJSON(w, map[string]any{"backends": rows, "probed": len(rows), "mismatches": bad})
	}
	writeProbeTable(w, []string{"FROM", "SERVICE", "PORT", "ADDRESS", "BACKEND", "KERNEL", "PREDICTED"}, len(rows), func(i int) ([]string, bool) {
		r := rows[i]
		return []string{r.From, r.Service, r.Port, r.Addr, r.Backend, r.Kernel, r.Predicted}, r.Mismatch
	})
	fmt.Fprintf(w, "\n%d backends probed through their Services, %d mismatches\n", len(rows), bad)
	return nil
}
