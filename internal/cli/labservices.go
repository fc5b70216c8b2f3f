package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/engine"
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
func probeServices(cmd *cobra.Command, l *lab.Lab, e *engine.Engine, output string) error {
	if output != "text" && output != "json" {
		return usageError{fmt.Errorf("--output %q: want text or json", output)}
	}
	if len(l.Services) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "lab %s has no Service with a cluster IP and backends among its pods\n", l.Name)
	}
	update, stop := probeProgress(cmd, "probing Services")
	cells := l.ProbeServices(cmd.Context(), update)
	stop()
	var rows []serviceProbeRow
	bad := 0
	for _, c := range cells {
		predicted, err := predictBackends(e, c)
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

// predictBackends is what the engine decides for c's source and each
// backend of its Service port (by pod), over c's address family.
func predictBackends(e *engine.Engine, c lab.ServiceCell) (map[string]bool, error) {
	ns, name, _ := strings.Cut(c.Service, "/")
	svc := e.Cluster().Service(ns, name)
	if svc == nil || c.Port.Index >= len(svc.Ports) {
		return nil, fmt.Errorf("the input has no Service %s port %d", c.Service, c.Port.Index)
	}
	src, err := e.Endpoint(c.From)
	if err != nil {
		return nil, err
	}
	v := e.DecideService(src, svc, &svc.Ports[c.Port.Index], c.Addr)
	out := map[string]bool{}
	for _, b := range v.Backends {
		if p := b.Flow.Dst.Pod; p != nil {
			out[p.Key()] = b.Verdict.Allowed
		}
	}
	return out, nil
}

func writeServiceProbe(w io.Writer, output string, rows []serviceProbeRow, bad int) error {
	if output == "json" {
		return writeJSON(w, map[string]any{"backends": rows, "probed": len(rows), "mismatches": bad})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FROM\tSERVICE\tPORT\tADDRESS\tBACKEND\tKERNEL\tPREDICTED")
	for _, r := range rows {
		mark := ""
		if r.Mismatch {
			mark = "  <-- MISMATCH"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", r.From, r.Service, r.Port, r.Addr, r.Backend, r.Kernel, r.Predicted, mark)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d backends probed through their Services, %d mismatches\n", len(rows), bad)
	return nil
}
