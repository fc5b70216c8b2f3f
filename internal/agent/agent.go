// Package agent is the node agent's control loop: it watches the input,
// rebuilds the engine when the input changes, compiles the node's IR and
// has the nftables renderer apply the difference in one transaction, then
// cuts the conntrack entries of connections that are now denied (the
// v1beta1 proposal asks that a policy change stop existing connections;
// cut.go). It is level-triggered and idempotent, like a Kubernetes
// controller: every pass computes the whole desired state and the renderer
// sends only what differs. The kernel is shared, so after every pass it
// checks that its table is still there (CheckKernel), and failed passes
// back off. It is a front end: it imports the pipeline, compile, render and
// the dataplane, and nothing imports it but cli.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// Config of an agent.
type Config struct {
	Node     string
	Input    Input
	Interval time.Duration // how often the input is looked at
	// Status, when set, is a file rewritten after every pass with the
	// fingerprint of the input that is programmed (see Status).
	Status   string
	Pipeline pipeline.Options
	// DryRun prints each transaction to Log instead of running it.
	DryRun bool
	// Conntrack cuts connections; nil leaves conntrack alone.
	Conntrack Conntrack
	// Reporter publishes the outcome of each pass (the policies' status in a
	// cluster); nil publishes nothing.
	Reporter Reporter
	// AuditDenies logs every deny (rules of all tiers and NetworkPolicy
	// isolation), not only those of policies annotated netpol.io/audit.
	AuditDenies bool
	// Audit learns what the kernel logs after every pass; nil when nobody
	// reads the log.
	Audit Auditor
	// Generation reads the kernel's nftables generation
	// (dataplane.Generation); when it moves past the one the agent's own
	// last write left, the agent verifies its table and repairs it. Nil
	// turns drift detection off (dry runs, tests without a kernel).
	Generation func() (uint32, error)
	// Resync rewrites the whole table this often even when nothing seems
	// to have changed: the drift check cannot see a rule or element
	// removed from inside a chain or set. 0: never.
	Resync time.Duration
	// DNS learns the addresses of domainNames rules (dns.go); nil: they
	// are never learned, so their connections are denied.
	DNS DNSLearner
	// DNSServers are the addresses whose DNS answers teach; none: those
	// ClusterDNS gives, or else the cluster IPs of the Service
	// kube-system/kube-dns in the input.
	DNSServers []netip.Addr
	// ClusterDNS, when set, gives the cluster DNS's addresses as they are
	// now (the CLI reads kube-system/kube-dns from the API server, again
	// and again), or why it cannot: the agent is not ready while
	// domainNames rules have no server to learn from.
	ClusterDNS func() ([]netip.Addr, error)
	// Record keeps the record of observed traffic (record.go); nil: the
	// kernel records nothing.
	Record Recorder
	// PodInterfaces are the globs of the node's pod interfaces
	// (compile.IR.PodInterfaces): packets from or to them must carry an
	// address of the pod behind the interface, or they are dropped.
	// PodLinks names the interfaces local pods' addresses are routed to
	// (dataplane.RouteDevices); nil binds no pod to an interface, so with
	// PodInterfaces every packet of a pod interface is dropped.
	PodInterfaces []string
	PodLinks      func([]netip.Addr) (map[netip.Addr]string, error)
	// LocalAddrs lists the node's own addresses (dataplane.LocalAddrs):
	// the cut never judges the node's connections. Nil: none are known.
	LocalAddrs func() ([]netip.Addr, error)
}

// Auditor turns the kernel's log into audit lines (package audit).
type Auditor interface {
	Update(audits map[string]*compile.Audit, podOf func(netip.Addr) string)
}

// Reporter publishes what a pass did: findings holds its findings (errors
// name the objects left out as invalid), programErr why the kernel does not
// enforce the input, or nil.
type Reporter interface {
	Report(ctx context.Context, findings diag.List, programErr error) error
}

// noticer is an Input that knows when it received the changes it last
// returned (kube.Watch); for other inputs a change counts from its Read.
type noticer interface{ Noticed() time.Time }

// Conntrack lists and deletes connection tracking entries
// (dataplane.Conntrack).
type Conntrack interface {
	// Cut deletes the entries of connections for which keep reports false,
	// after hold was given them all and succeeded, and returns how many it
	// deleted.
	Cut(ctx context.Context, keep func(l4.Conn) bool, hold func([]l4.Conn) error) (int, error)
}

// Status is what the agent last did, as written to Config.Status.
type Status struct {
	Node string `json:"node"`
	// Input is the fingerprint of the input last read; Programmed is the
	// fingerprint of the input the kernel now enforces (they differ when the
	// input is invalid or the kernel refused the transaction).
	Input      string    `json:"input"`
	Programmed string    `json:"programmed"`
	Error      string    `json:"error,omitempty"`
	Stats      nft.Stats `json:"stats"`
	Cut        int       `json:"conntrackCut"`
	// CutFor is the input whose conntrack cut is done (Cut counts it):
	// equal to Programmed once the connections it denies are cut.
	CutFor string `json:"conntrackCutFor,omitempty"`
	// FailedClosed lists the errors of the admin policies that are
	// invalid and enforced in their fail-closed form (an invalid rule
	// denies all traffic, an invalid Allow rule matches nothing): the
	// agent is not ready while there are any.
	FailedClosed []string `json:"failedClosed,omitempty"`
	// Repaired counts the times the agent found its table changed by
	// someone else and programmed it again; Drift says what it found
	// last.
	Repaired int    `json:"driftRepaired"`
	Drift    string `json:"drift,omitempty"`
	// Refused are the NetworkPolicies this node does not program as
	// written because they are too large (compile.Refusal): each isolates
	// its pods and allows nothing.
	Refused []string `json:"refused,omitempty"`
	// Unchecked are the local pods ("ns/name on link") whose link no
	// --pod-interfaces glob names: their packets are judged by address
	// only (a forged source, the window before their rules, are not
	// closed for them).
	Unchecked []string    `json:"unchecked,omitempty"`
	Pods      int         `json:"localPods"`
	Tables    int         `json:"tables"`
	Time      time.Time   `json:"time"`
	Took      string      `json:"took"`
	IR        *compile.IR `json:"-"`
}

// Agent runs the loop for one node.
type Agent struct {
	cfg      Config
	renderer *nft.Renderer
	status   Status
	badInput string // fingerprint of an input that failed validation
	badErr   error  // and why
	logTx    func(string)
	metrics  *metrics
	health   health
	// dnsLast is what the DNS learner was last given (dns.go), so that a
	// pass with the input unchanged can still follow the cluster DNS.
	dnsLast dnsUpdate
	// unreported holds the outcome that the Reporter failed to publish, to
	// retry on the next pass (without ReportInBackground).
	unreported *outcome
	// reports takes the outcomes to the reporting goroutine
	// (ReportInBackground); nil: passes report themselves.
	reports  chan outcome
	logged   map[string]bool // the findings of the last pass, logged
	builder  *pipeline.Builder
	compiler compile.Compiler
	cuts     *cutter // nil: cuts are made within the pass (see cutAfter)
	// cutPending is the input of the last cut handed to the cutter and not
	// yet done ("" when none).
	cutPending string
	// held are the connections this agent cut and holds in the kernel's
	// cut sets, with the order they were held in (see remember); the
	// cutter's goroutine and the loop share them.
	heldMu  sync.Mutex
	held    map[l4.Conn]uint64
	heldSeq uint64
	// generation is the kernel's nftables generation after the agent's
	// own last write (see Config.Generation); lastResync when the table
	// was last rewritten whole.
	// partial: the kernel holds what this agent programmed from an
	// incomplete input (see enforcesOnlyWhatIsKnown).
	partial bool
	// unbound are the addresses of the local pods whose interface the
	// last pass did not find (bindInterfaces): every turn of the loop
	// looks for them again, and passes when one has appeared.
	unbound    []netip.Addr
	generation uint32
	lastResync time.Time
	lastVerify time.Time
}

type outcome struct {
	findings diag.List
	err      error
}

// New returns an agent that programs through renderer. logTx receives the
// text of each transaction in dry-run mode.
func New(cfg Config, renderer *nft.Renderer, logTx func(string)) *Agent {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	// One invalid object must not stop the enforcement of the others, from
	// files as from a cluster: it is left out and reported (a node that
	// refused the whole input would enforce nothing, or nothing new).
	cfg.Pipeline.SkipInvalid = true
	// The node's own engine: NetworkPolicies of namespaces without a pod
	// here cannot change its tables, and at 75,000 of them they cost more
	// than all the rest (pipeline.Options.Node).
	cfg.Pipeline.Node = cfg.Node
	m := newMetrics()
	if cfg.DNS != nil {
		m.registry.MustRegister(dnsCollectors(cfg.DNS)...)
	}
	if cfg.Record != nil {
		m.registry.MustRegister(recordCollectors(cfg.Record)...)
	}
	return &Agent{cfg: cfg, renderer: renderer, status: Status{Node: cfg.Node}, logTx: logTx, metrics: m,
		health: health{deadline: time.Minute + 10*cfg.Interval}, builder: &pipeline.Builder{Options: cfg.Pipeline},
		compiler: compile.Compiler{AuditDenies: cfg.AuditDenies, Record: cfg.Record != nil}}
}

// Run loops until ctx is done. After each pass it checks that the kernel
// still holds what it programmed (see Config.Generation). A failed pass is
// retried after a bounded exponential backoff, or at once when the input
// changes; the kernel keeps the last rules that were programmed.
func (a *Agent) Run(ctx context.Context) error {
	a.CutInBackground(ctx)
	a.ReportInBackground(ctx)
	failures := 0
	for {
		a.health.tick()
		err := a.Pass(ctx)
		if err == nil {
			err = a.CheckKernel(ctx)
		}
		wait := a.cfg.Interval
		if err != nil {
			failures++
			wait = backoff(a.cfg.Interval, failures)
			klog.ErrorS(err, "Sync failed; the last programmed rules stay in place", "node", a.cfg.Node,
				"failures", failures, "retryIn", wait)
		} else {
			failures = 0
		}
		a.health.failed(err)
		a.metrics.failing.Set(float64(failures))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		case <-a.cfg.Input.Changed(): // a nil channel never fires
			timer.Stop()
		case r := <-a.cuts.results(): // nil without a cutter
			timer.Stop()
			a.cutDone(r)
		}
	}
}

// maxBackoff bounds the wait between failed passes.
const maxBackoff = 30 * time.Second

// backoff is the wait after the n-th failure in a row: the interval,
// doubled with each failure, at most maxBackoff.
func backoff(interval time.Duration, n int) time.Duration {
	d := interval
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// verifySpacing is the least time between two verifications of the table:
// on a node where another writer (kube-proxy) changes the ruleset all the
// time, each verification reads the table through nft (70-80 ms at 100
// pods and 77k set elements; BENCHMARKS.md), so a repair may wait this
// long, and the agent spends at most that much a second on it.
const verifySpacing = time.Second

// CheckKernel repairs the table when someone else changed it: when the
// nftables generation moved past the agent's own last write and the table
// no longer holds what was programmed, or when a full resync is due, the
// renderer forgets what it programmed and the agent programs the input
// again (the renderer then reconciles with what the kernel really holds).
func (a *Agent) CheckKernel(ctx context.Context) error {
	if a.cfg.DryRun || a.status.Programmed == "" {
		return nil
	}
	resync := a.cfg.Resync > 0 && time.Since(a.lastResync) >= a.cfg.Resync
	if !resync {
		if a.cfg.Generation == nil {
			return nil
		}
		gen, err := a.cfg.Generation()
		if err != nil {
			return fmt.Errorf("reading the nftables generation: %w", err)
		}
		if gen == a.generation || time.Since(a.lastVerify) < verifySpacing {
			return nil // unchanged, or verified a moment ago: next turn
		}
		a.lastVerify = time.Now()
		drift, err := a.renderer.Verify(ctx)
		if err != nil {
			return fmt.Errorf("verifying the nftables table: %w", err)
		}
		if drift == "" {
			a.generation = gen // someone else's change, not to our table
			return nil
		}
		a.status.Repaired++
		a.status.Drift = drift
		a.metrics.drift.Inc()
		klog.InfoS("The nftables table was changed by someone else; programming it again", "node", a.cfg.Node, "drift", drift)
	}
	a.renderer.Forget()
	a.status.Programmed = "" // the next pass programs the input, whatever it is
	if err := a.Pass(ctx); err != nil {
		return err
	}
	// A table that someone deleted took the held connections with it.
	a.heldMu.Lock()
	held := slices.Collect(maps.Keys(a.held))
	a.heldMu.Unlock()
	if err := a.renderer.Hold(ctx, held); err != nil {
		return fmt.Errorf("holding the cut connections again: %w", err)
	}
	return nil
}

// Pass reads the input and, if it changed since the last good pass,
// programs it.
func (a *Agent) Pass(ctx context.Context) (err error) {
	objects, decoded, fp, err := a.cfg.Input.Read()
	incomplete := errors.Is(err, source.ErrIncomplete) && a.enforcesOnlyWhatIsKnown(ctx)
	if err != nil && !incomplete {
		a.metrics.errors.WithLabelValues(stageInput).Inc()
		return a.fail(err)
	}
	if incomplete {
		// Programmed below, and the pass still fails: not ready, retried.
		a.metrics.errors.WithLabelValues(stageInput).Inc()
		a.partial = true
		fp += "+incomplete"
		inputErr := err
		defer func() {
			if err == nil {
				err = a.fail(inputErr)
			}
		}()
	} else {
		a.partial = false
	}
	if fp == a.status.Programmed && a.status.Error == "" && !a.linkAppeared() || fp == a.badInput {
		// Programmed already, or known to be invalid: not decoded again,
		// but an invalid input is still the answer of this pass (the loop
		// stays not ready and backs off).
		if o := a.unreported; o != nil {
			a.report(ctx, o.findings, o.err)
		}
		a.followDNS(ctx)
		if fp == a.badInput {
			return a.badErr
		}
		return nil
	}
	start := time.Now()
	noticed := start
	if n, ok := a.cfg.Input.(noticer); ok && !n.Noticed().IsZero() {
		noticed = n.Noticed()
	}
	a.status.Input = fp
	e, diags, err := a.builder.Build(objects, decoded)
	a.logFindings(diags)
	a.metrics.invalid.Set(float64(countObjects(diags.Errors())))
	if err == nil {
		a.failedClosed(e, diags)
	}
	if err != nil {
		a.metrics.errors.WithLabelValues(stageInput).Inc()
		err = fmt.Errorf("input %s not programmed: %w", fp, err)
		a.badInput, a.badErr = fp, err
		a.report(ctx, diags, err)
		return a.fail(err)
	}
	ir := a.compiler.Node(e, a.cfg.Node)
	diags = append(diags, a.refused(ir.Refused)...)
	a.compiler.AddStaged(ir, e)
	a.bindInterfaces(ir)
	if a.cfg.Audit != nil {
		// Before the kernel logs with the new rules; the auditor keeps the
		// previous ones for packets logged before the change.
		c := e.Cluster()
		a.cfg.Audit.Update(compile.Audits(ir), podNames(c, (*state.Pod).Key))
	}
	if a.cfg.Record != nil {
		a.cfg.Record.Update(podNames(e.Cluster(), (*state.Pod).Workload))
	}
	if a.cfg.DryRun {
		tx, st, err := a.renderer.Plan(ctx, ir)
		if err != nil {
			return a.fail(err)
		}
		a.logTx(tx.String())
		a.status.Stats = st
		a.renderer.Forget() // nothing was applied: plan from the kernel again
	} else {
		st, err := a.renderer.Sync(ctx, ir)
		if err != nil {
			a.metrics.errors.WithLabelValues(stageKernel).Inc()
			a.report(ctx, diags, err)
			return a.fail(err)
		}
		a.status.Stats = st
		a.metrics.latency.Observe(time.Since(noticed).Seconds())
		a.health.programmed()
		a.updateDNS(ctx, e, ir)
	}
	if a.cfg.Conntrack != nil && !a.cfg.DryRun && a.status.Stats.Operations > 0 {
		a.cutAfter(ctx, cutJob{ir: ir, input: fp})
	} else if a.cutPending == "" {
		a.status.Cut, a.status.CutFor = 0, fp // nothing to cut
	} // else the pending cut covers fp (cutDone)
	if !a.cfg.DryRun {
		a.wrote()
	}
	a.status.Programmed, a.status.Error = fp, ""
	a.status.Pods, a.status.Tables, a.status.IR = len(ir.Pods), len(ir.Tables), ir
	a.status.Time, a.status.Took = time.Now(), time.Since(start).Round(time.Microsecond).String()
	a.observe(time.Since(start), len(ir.Pods))
	klog.InfoS("Programmed", "node", a.cfg.Node, "input", fp, "pods", len(ir.Pods), "tables", len(ir.Tables),
		"operations", a.status.Stats.Operations, "conntrackCut", a.status.Cut, "took", a.status.Took)
	a.report(ctx, diags, nil)
	return a.writeStatus()
}

// failedClosed notes the admin policies of e that are enforced in their
// fail-closed form, with their errors from diags: in the status, the
// metric, and /readyz.
func (a *Agent) failedClosed(e *engine.Engine, diags diag.List) {
	a.metrics.failedClosed.Reset()
	var why []string
	for _, p := range e.Policies().Policies() {
		// An invalid NetworkPolicy is a tenant's: it is reported as an
		// invalid object (an error finding, netpol_invalid_objects) and
		// enforced failed closed, but does not make the node not ready,
		// which a tenant must not be able to do to every node.
		if !p.Invalid || p.Tier == policy.TierNetworkPolicy {
			continue
		}
		a.metrics.failedClosed.WithLabelValues(p.Kind, p.Name).Set(1)
		for _, d := range diags.Errors() {
			if d.Object == p.Ref.String() {
				why = append(why, d.String())
			}
		}
	}
	a.status.FailedClosed = why
	a.health.setFailedClosed(why)
}

// refused logs the policies that compile refused as too large, when they
// change, counts them, keeps them in the status, and returns them as
// findings for the Reporter: errors that name the policy.
func (a *Agent) refused(refusals []*compile.Refusal) diag.List {
	var texts []string
	var out diag.List
	for _, r := range refusals {
		texts = append(texts, r.Error())
		out = append(out, diag.Diagnostic{Severity: diag.Error, Object: r.Policy.String(), Message: r.Error()})
	}
	if !slices.Equal(texts, a.status.Refused) {
		for _, r := range refusals {
			klog.ErrorS(r, "Policy refused: its pods stay isolated, it allows nothing", "node", a.cfg.Node, "policy", r.Policy.String())
		}
	}
	a.status.Refused = texts
	a.metrics.refused.Set(float64(len(refusals)))
	return out
}

// enforcesOnlyWhatIsKnown reports whether an incomplete input (some
// kinds unknown: source.ErrIncomplete) is to be programmed: on a node
// whose kernel holds no table of netpol's, or one this agent wrote from
// an incomplete input, what is known denies more than nothing does. A
// table that a predecessor or this agent wrote from a complete input stays
// as it is: its admin rules may be the ones unknown now.
func (a *Agent) enforcesOnlyWhatIsKnown(ctx context.Context) bool {
	if a.partial {
		return true
	}
	if a.status.Programmed != "" || a.cfg.DryRun {
		return false
	}
	exists, err := a.renderer.TableExists(ctx)
	return err == nil && !exists
}

// wrote notes the kernel's state after the agent's own writes: the
// nftables generation they left, and when the table was last written whole.
func (a *Agent) wrote() {
	if a.status.Stats.Full || a.lastResync.IsZero() {
		a.lastResync = time.Now()
	}
	if a.cfg.Generation == nil {
		return
	}
	gen, err := a.cfg.Generation()
	if err != nil {
		klog.ErrorS(err, "Reading the nftables generation", "node", a.cfg.Node)
		return
	}
	a.generation = gen
}

func (a *Agent) observe(took time.Duration, pods int) {
	a.metrics.sync.Observe(took.Seconds())
	a.metrics.pods.Set(float64(pods))
	if !a.cfg.DryRun {
		sz := a.renderer.Programmed()
		a.metrics.chains.Set(float64(sz.Chains))
		a.metrics.rules.Set(float64(sz.Rules))
		a.metrics.sets.Set(float64(sz.Sets))
		a.metrics.elements.Set(float64(sz.Elements))
	}
}

// report publishes a pass's outcome, and keeps it to retry if that fails
// (the API server may be away; the rules stay either way).
// logFindings logs the findings that the previous pass did not have: a
// cluster with a hundred warnings would otherwise repeat them all on every
// change.
func (a *Agent) logFindings(l diag.List) {
	now := make(map[string]bool, len(l))
	for _, d := range l {
		s := d.String()
		now[s] = true
		if a.logged[s] {
			continue
		}
		if d.Severity == diag.Error && d.Object == "" {
			klog.ErrorS(nil, "Invalid input: none of it is programmed", "finding", s)
		} else if d.Severity == diag.Error && policy.IsAdminKind(d.ObjectKind()) {
			klog.ErrorS(nil, "Invalid admin policy enforced failed closed (or, unreadable, the input refused)", "finding", s)
		} else if d.Severity == diag.Error {
			klog.ErrorS(nil, "Invalid object left out", "finding", s)
		} else {
			klog.InfoS("Input warning", "finding", s)
		}
	}
	a.logged = now
}

func countObjects(l diag.List) int {
	seen := map[string]bool{}
	for _, d := range l {
		seen[d.Object+"\x00"+d.Origin.String()] = true
	}
	return len(seen)
}

// Status returns the state of the last pass.
func (a *Agent) Status() Status { return a.status }

func (a *Agent) fail(err error) error {
	a.status.Error = err.Error()
	a.status.Time = time.Now()
	if werr := a.writeStatus(); werr != nil {
		klog.ErrorS(werr, "Writing status")
	}
	return err
}

// writeStatus replaces the status file atomically: readers never see half.
// The agent runs as root, so the temporary file is a new one with a name
// nobody can guess in advance (O_EXCL: a link planted where it goes is
// never followed), and the rename replaces a link at the status path
// itself instead of writing through it.
func (a *Agent) writeStatus() error {
	if a.cfg.Status == "" {
		return nil
	}
	data, err := json.MarshalIndent(a.status, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Clean(a.cfg.Status)
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644) // CreateTemp makes it 0600; the status is for everyone on the node
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// ReadStatus reads a status file.
func ReadStatus(path string) (Status, error) {
	var s Status
	data, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(data, &s)
}

// bindInterfaces names in ir the interface of each local pod, where its
// packets come in (render/nft's pods.go says why): the interface its
// address is routed to, when that is a pod interface. A pod whose
// interface is not found stays unbound, so its packets are dropped, and
// the loop looks for it at every turn (linkAppeared) rather than at the
// next input change: a pod is denied between its start and the pass that
// finds its link, never open.
func (a *Agent) bindInterfaces(ir *compile.IR) {
	a.unbound = nil
	if len(a.cfg.PodInterfaces) == 0 {
		return
	}
	ir.PodInterfaces = a.cfg.PodInterfaces
	if a.cfg.PodLinks == nil {
		return
	}
	var ips []netip.Addr
	for _, p := range ir.Pods {
		ips = append(ips, p.IPs...)
	}
	links, err := a.cfg.PodLinks(ips)
	if err != nil {
		klog.ErrorS(err, "Finding the pods' interfaces; their packets are dropped until found", "node", a.cfg.Node)
	}
	var missing, unchecked []string
	for i := range ir.Pods {
		p := &ir.Pods[i]
		other := ""
		for _, ip := range p.IPs {
			name := links[ip]
			if a.podInterface(name) {
				p.Interface = name
				break
			}
			if name != "" {
				other = name
			}
		}
		switch {
		case p.Interface != "":
		case other != "":
			unchecked = append(unchecked, p.Pod+" on "+other)
		default:
			missing = append(missing, p.Pod)
			a.unbound = append(a.unbound, p.IPs...)
		}
	}
	if len(missing) > 0 {
		klog.V(1).InfoS("Pods whose interface is not found: their packets are dropped until it is", "node", a.cfg.Node, "pods", missing)
	}
	if !slices.Equal(unchecked, a.status.Unchecked) && len(unchecked) > 0 {
		klog.ErrorS(nil, "Pods on links that no --pod-interfaces glob names: their packets are judged by address only (a forged source, the window before their rules, are not closed for them); name their links with the flag",
			"node", a.cfg.Node, "pods", unchecked, "globs", a.cfg.PodInterfaces)
	}
	a.status.Unchecked = unchecked
}

// podInterface reports whether name is a pod interface that renderers can
// write.
func (a *Agent) podInterface(name string) bool {
	return compile.ValidInterface(name) && compile.MatchInterface(a.cfg.PodInterfaces, name)
}

// linkAppeared reports whether the interface of a pod that the last pass
// left unbound is there now: one dump of the routes, no pass.
func (a *Agent) linkAppeared() bool {
	if len(a.unbound) == 0 || a.cfg.PodLinks == nil {
		return false
	}
	links, err := a.cfg.PodLinks(a.unbound)
	if err != nil {
		return false
	}
	for _, name := range links {
		if a.podInterface(name) {
			return true
		}
	}
	return false
}
