package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"k8s.io/klog/v2"

	"github.com/netpol/netpol/internal/compile"
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

// cutJob is one cut: the IR the kernel was programmed with, and the input
// (fingerprint) it was programmed for. The cut decides with the IR's
// evaluator, which decides as the kernel's rules do (compile's
// differential test holds it to the engine), with what the kernel's
// domain sets have learned: a connection the rules allow is never cut.
type cutJob struct {
	ir    *compile.IR
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

// cut deletes the conntrack entries of connections that job's rules deny,
// holding them first, and releases held connections that they allow
// again. It touches the kernel only through the renderer's cut sets and
// conntrack, never the rules the pass writes.
func (a *Agent) cut(ctx context.Context, job cutJob) int {
	allowed := a.judge(ctx, job)
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
	denied := map[pair]bool{} // pairs with a held connection still denied
	a.heldMu.Lock()
	for c := range a.held {
		if allowed(c) {
			again = append(again, c)
		} else {
			denied[pairOf(c)] = true
		}
	}
	a.heldMu.Unlock()
	var pairs []l4.Conn // one connection of each pair no hold needs now
	seen := map[pair]bool{}
	for _, c := range again {
		if p := pairOf(c); !denied[p] && !seen[p] {
			seen[p] = true
			pairs = append(pairs, c)
		}
	}
	if err := errors.Join(a.renderer.Release(ctx, again), a.renderer.ReleasePairs(ctx, pairs)); err != nil {
		klog.ErrorS(err, "Releasing connections that the policies allow again failed", "node", a.cfg.Node)
	} else {
		a.heldMu.Lock()
		for _, c := range again {
			delete(a.held, c)
		}
		a.heldMu.Unlock()
	}
	n, err := a.cfg.Conntrack.Cut(ctx, allowed, func(conns []l4.Conn) error {
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

// judge returns the decision of job's rules on a connection: allowed when
// no local pod's table denies it. The node's own connections leave by the
// output hook, where no rule judges them (kubelet probes), so they are
// allowed whatever the tables say of the node's address.
func (a *Agent) judge(ctx context.Context, job cutJob) func(l4.Conn) bool {
	ev := job.ir.Evaluator()
	if len(job.ir.DomainSets) > 0 {
		learned, err := a.renderer.Learned(ctx, job.ir.DomainSets)
		if err != nil {
			// What could not be read counts as not learned: the cut may
			// then cut an allowed domain connection, never keep a denied one.
			klog.ErrorS(err, "Reading the learned addresses for the cut", "node", a.cfg.Node)
		}
		ev.Learned = learned
	}
	node := map[netip.Addr]bool{}
	if a.cfg.LocalAddrs != nil {
		addrs, err := a.cfg.LocalAddrs()
		if err != nil {
			klog.ErrorS(err, "Reading the node's addresses for the cut", "node", a.cfg.Node)
		}
		for _, ip := range addrs {
			node[ip] = true
		}
	}
	return func(c l4.Conn) bool {
		if node[c.Src.Addr()] {
			return true
		}
		egress, ingress := ev.Decide(c.Src.Addr(), c.Dst.Addr(), c.Port())
		return egress.Allowed && ingress.Allowed
	}
}

// pair is a connection's address pair and protocol, as the pair sets hold
// it (nft.Renderer.Hold).
type pair struct {
	src, dst netip.Addr
	proto    l4.Protocol
	number   uint8
}

func pairOf(c l4.Conn) pair { return pair{c.Src.Addr(), c.Dst.Addr(), c.Proto, c.Number} }

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
