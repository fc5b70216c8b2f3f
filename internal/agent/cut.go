package agent

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/render/nft"
)

// The conntrack cut follows a pass that changed the kernel: the connections
// to or from local pods that the new rules deny are held in the kernel's
// cut sets (nft.CutHold says why) and their entries deleted; held
// connections that the rules allow again are released.
//
// In the loop (Run) the cut runs on a goroutine of its own, after the pass
// has programmed the change: reading the conntrack table makes the kernel
// walk every bucket of its hash, entries or not (~9 ms per address family
// for the 262,144 buckets of a 24 GiB machine; BENCHMARKS.md), and new
// connections meet the new rules from the moment the pass programmed them,
// so only connections already open wait for the cut. A cut asked for while
// another waits replaces it: the newer engine judges every connection the
// older would have. Status.CutFor says which input's cut is done. Called
// outside Run (Pass alone, --once), the pass cuts before it returns.

// cutJob is one cut: the engine that judges, the node's local pods, and the
// input (fingerprint) it was programmed for.
type cutJob struct {
	e     *engine.Engine
	local map[string]bool
	input string
}

type cutResult struct {
	input string
	n     int
}

// cutter hands cuts to the goroutine that makes them and their results back
// to the loop.
type cutter struct {
	jobs chan cutJob
	done chan cutResult
}

func newCutter() *cutter {
	return &cutter{jobs: make(chan cutJob, 1), done: make(chan cutResult, 1)}
}

// results is what the loop waits on; nil (never ready) without a cutter.
func (c *cutter) results() <-chan cutResult {
	if c == nil {
		return nil
	}
	return c.done
}

// request queues job, replacing one that has not started: the newer engine
// judges every connection the older would have.
func (c *cutter) request(job cutJob) { replace(c.jobs, job) }

// replace puts v in ch (of capacity 1), dropping what waits there.
func replace[T any](ch chan T, v T) {
	for {
		select {
		case ch <- v:
			return
		default:
			select {
			case <-ch:
			default:
			}
		}
	}
}

func localPods(ir *compile.IR) map[string]bool {
	local := make(map[string]bool, len(ir.Pods))
	for _, p := range ir.Pods {
		local[p.Pod] = true
	}
	return local
}

// cutAfter makes job's cut: on the cutter's goroutine when the loop runs
// one, else at once.
func (a *Agent) cutAfter(ctx context.Context, job cutJob) {
	if a.cuts != nil {
		a.cutPending = job.input
		a.cuts.request(job)
		return
	}
	a.counted(job.input, a.cut(ctx, job))
	a.status.CutFor = job.input
}

// cutDone takes a cut made in the background into the status. The cut
// asked for last covers the input programmed now: the passes after it
// changed nothing in the kernel, so they deny nothing more.
func (a *Agent) cutDone(r cutResult) {
	a.counted(r.input, r.n)
	if r.input == a.cutPending {
		a.cutPending = ""
		a.status.CutFor = a.status.Programmed
	}
	if err := a.writeStatus(); err != nil {
		klog.ErrorS(err, "Writing status")
	}
}

func (a *Agent) counted(input string, n int) {
	a.status.Cut = n
	a.metrics.cut.Add(float64(n))
	if n > 0 {
		klog.InfoS("Cut denied connections", "node", a.cfg.Node, "input", input, "conntrackCut", n)
	}
}

// CutInBackground has the passes that follow hand their conntrack cuts to
// a goroutine of its own, until ctx ends; Run does this. The loop takes
// the results (the newest, when it falls behind) into the status.
func (a *Agent) CutInBackground(ctx context.Context) {
	if a.cfg.Conntrack == nil || a.cfg.DryRun || a.cuts != nil {
		return
	}
	a.cuts = newCutter()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case job := <-a.cuts.jobs:
				replace(a.cuts.done, cutResult{input: job.input, n: a.cut(ctx, job)})
			}
		}
	}()
}

// cut deletes the conntrack entries of connections to or from local pods
// that job's engine denies, holding them first, and releases held
// connections that it allows again. It touches the kernel only through
// the renderer's cut sets and conntrack, never the rules the pass writes.
func (a *Agent) cut(ctx context.Context, job cutJob) int {
	e := job.e
	ours := func(c l4.Conn) (engine.Flow, bool) {
		f := engine.Flow{Src: endpoint(e, c.Src.Addr()), Dst: endpoint(e, c.Dst.Addr()), Port: c.Port()}
		return f, isLocal(f.Src, job.local) || isLocal(f.Dst, job.local)
	}
	a.heldMu.Lock()
	learn := a.held == nil
	a.heldMu.Unlock()
	if learn {
		// A restarted agent: the kernel still holds what its predecessor
		// cut.
		held, err := a.renderer.Held(ctx)
		if err != nil {
			klog.ErrorS(err, "Listing the held connections", "node", a.cfg.Node)
		}
		a.remember(held)
	}
	var again []l4.Conn
	a.heldMu.Lock()
	for c := range a.held {
		if f, ok := ours(c); !ok || e.Allowed(f) {
			again = append(again, c)
		}
	}
	a.heldMu.Unlock()
	if err := a.renderer.Release(ctx, again); err != nil {
		klog.ErrorS(err, "Releasing connections that the policies allow again failed", "node", a.cfg.Node)
	} else {
		a.heldMu.Lock()
		for _, c := range again {
			delete(a.held, c)
		}
		a.heldMu.Unlock()
	}
	n, err := a.cfg.Conntrack.Cut(ctx, func(c l4.Conn) bool {
		f, ok := ours(c)
		return !ok || e.Allowed(f) // not ours to judge, or allowed
	}, func(conns []l4.Conn) error {
		a.remember(conns) // held or not, released when allowed again
		if err := a.renderer.Hold(ctx, conns); err != nil {
			return fmt.Errorf("holding %d connections in the cut sets (cut without the hold): %w", len(conns), err)
		}
		return nil
	})
	if err != nil {
		klog.ErrorS(err, "Cutting denied connections failed", "node", a.cfg.Node)
	}
	return n
}

// remember keeps the connections held, to release them when a later
// change allows them. The memory is bounded: past four times the cut
// sets' capacity, all but the newest two capacities are forgotten (the
// kernel still holds those until they have been quiet for nft.CutHold).
func (a *Agent) remember(conns []l4.Conn) {
	a.heldMu.Lock()
	defer a.heldMu.Unlock()
	if a.held == nil {
		a.held = map[l4.Conn]uint64{}
	}
	for _, c := range conns {
		a.heldSeq++
		a.held[c] = a.heldSeq
	}
	if len(a.held) > 4*nft.CutCapacity {
		cutoff := a.heldSeq - 2*nft.CutCapacity
		for c, seq := range a.held {
			if seq <= cutoff {
				delete(a.held, c)
			}
		}
	}
}
