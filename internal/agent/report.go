package agent

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/netpol/netpol/internal/diag"
)

// ReportInBackground makes the loop hand each pass's outcome to a
// goroutine that publishes it through the Reporter, so that the API
// server's pace never holds the node's programming: the first agent of a
// cluster writes the status of every admin policy (1,500 take 5 minutes
// at client-go's default 5 requests a second), and a change or a new pod
// programmed only after them would wait as long. Only the latest outcome
// is published: one that was not yet sent when a newer came is dropped,
// as the newer says all it said. A failed report is retried with the
// loop's backoff, or sooner when a newer outcome comes. Without it (a
// pass run on its own) the pass reports before it returns.
func (a *Agent) ReportInBackground(ctx context.Context) {
	if a.cfg.Reporter == nil || a.reports != nil {
		return
	}
	a.reports = make(chan outcome, 1)
	go func() {
		var pending *outcome
		var retry <-chan time.Time
		failures := 0
		for {
			select {
			case <-ctx.Done():
				return
			case o := <-a.reports:
				pending = &o
			case <-retry:
			}
			retry = nil
			if pending == nil {
				continue
			}
			if err := a.cfg.Reporter.Report(ctx, pending.findings, pending.err); err != nil {
				failures++
				wait := backoff(a.cfg.Interval, failures)
				a.metrics.errors.WithLabelValues(stageStatus).Inc()
				klog.ErrorS(err, "Reporting status failed", "node", a.cfg.Node, "retryIn", wait)
				retry = time.After(wait)
				continue
			}
			failures, pending = 0, nil
		}
	}()
}

// report publishes a pass's outcome: on the reporting goroutine when the
// loop runs one, else at once (and again on the next pass if it fails).
func (a *Agent) report(ctx context.Context, findings diag.List, programErr error) {
	if a.cfg.Reporter == nil {
		return
	}
	if a.reports != nil {
		replace(a.reports, outcome{findings, programErr})
		return
	}
	a.unreported = &outcome{findings, programErr}
	if err := a.cfg.Reporter.Report(ctx, findings, programErr); err != nil {
		a.metrics.errors.WithLabelValues(stageStatus).Inc()
		klog.ErrorS(err, "Reporting status failed; retrying on the next pass", "node", a.cfg.Node)
		return
	}
	a.unreported = nil
}
