package nft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
)

// TableName is the inet table netpol owns.
const TableName = "netpol"

// Renderer keeps one nftables table equal to the last IR it was given.
// It remembers what it programmed, so each Sync sends only the difference.
// Not safe for concurrent use.
type Renderer struct {
	nft        knftables.Interface
	programmed *ruleset // nil until the first successful Sync
	builder    builder
	elements   ElementWriter
	// laterDeletes sends the deletion of unused chains, sets and maps in
	// a transaction of its own after the change (see DeleteLater).
	laterDeletes bool
	objects      ObjectLister
	// chainBatch is the most rules a transaction of new table chains
	// holds (0: chainBatchRules).
	chainBatch int
}

// ObjectLister lists the names of the table's chains, sets and maps
// (dataplane.Objects), or says that the table is gone with
// dataplane.ErrNoTable.
type ObjectLister interface {
	List(ctx context.Context) (chains, sets, maps []string, err error)
}

// ListObjectsWith has the renderer read the names of what the kernel
// holds through l, when it reconciles and when it verifies, instead of
// three nft listings of the whole table (knftables lists every set
// element to name the sets).
func (r *Renderer) ListObjectsWith(l ObjectLister) { r.objects = l }

// objectNames returns the names of the table's chains, sets and maps by
// kind ("chain", "set", "map"); gone when the table does not exist.
func (r *Renderer) objectNames(ctx context.Context) (names map[string][]string, gone bool, err error) {
	names = map[string][]string{}
	if r.objects != nil {
		chains, sets, maps, err := r.objects.List(ctx)
		if errors.Is(err, dataplane.ErrNoTable) {
			return names, true, nil
		}
		names["chain"], names["set"], names["map"] = chains, sets, maps
		return names, false, err
	}
	for _, kind := range []string{"chain", "set", "map"} {
		list, err := r.nft.List(ctx, kind)
		if knftables.IsNotFound(err) {
			return names, true, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("listing nftables %ss: %w", kind, err)
		}
		names[kind] = list
	}
	return names, false, nil
}

// DeleteLater has the renderer delete the chains, sets and maps a change
// leaves unused in a second transaction, after the one that stops using
// them, instead of at the end of the same one. Kernels before 6.2 count a
// chain as used until the transaction that deletes the last map element
// or rule jumping to it has committed, and answer EBUSY to a deletion of
// both in one transaction (the kube-proxy nftables backend defers its
// deletions for the same reason); later kernels release the reference
// within the transaction. NeedsDeleteLater says which kernel is which.
func (r *Renderer) DeleteLater(on bool) { r.laterDeletes = on }

// NeedsDeleteLater reports whether a kernel release (uname -r, "6.1.0-18")
// is older than 6.2; releases it cannot read count as old (the safe way
// costs one more transaction, the other a failed sync).
func NeedsDeleteLater(release string) bool {
	var major, minor int
	if n, _ := fmt.Sscanf(release, "%d.%d", &major, &minor); n != 2 {
		return true
	}
	return major < 6 || major == 6 && minor < 2
}

// ElementWriter writes set and map elements, and deletes the chains and
// sets they leave unused, in one kernel transaction without the nft binary
// (dataplane.Elements).
type ElementWriter interface {
	Write([]dataplane.Element, dataplane.Unused) error
}

// SetFiller fills one set over netlink in bounded batches
// (dataplane.Elements.Fill): an ElementWriter that is one has the renderer
// load the selections' sets of a full sync itself, before the nft
// transaction, which then carries no set element (see prefill).
type SetFiller interface {
	Fill(set string, elems []dataplane.Element) error
	Replace(sets map[string][]dataplane.Element) error
}

// WriteElementsWith has the renderer send element changes (a pod starting,
// stopping or changing labels: the common change) through w instead of nft,
// which takes hundreds of milliseconds to read a large table before it adds
// one element; chains and sets still go through nft (see plan).
func (r *Renderer) WriteElementsWith(w ElementWriter) { r.elements = w }

// New returns a renderer over nft, which must be bound to family inet and
// table TableName (knftables.New(knftables.InetFamily, nft.TableName)).
func New(nft knftables.Interface) *Renderer {
	return &Renderer{nft: nft}
}

// Stats describe one transaction.
type Stats struct {
	Operations int `json:"operations"`
	Chains     int `json:"chains"`   // chains written (added or replaced)
	Elements   int `json:"elements"` // set and map elements added or deleted
	// Netlink: the element changes went to the kernel through the
	// ElementWriter, and nft ran only for chains and sets, if at all.
	Netlink bool `json:"netlink,omitempty"`
	// Full: the transaction rewrote the whole table, reconciling with what
	// the kernel held (a first sync, or one after Forget or a failure).
	Full bool `json:"full,omitempty"`
}

// Plan returns the transaction that would bring the kernel to ir, without
// running it. The first plan of a renderer reconciles with what the kernel
// holds (netpol's table after a restart), so it reads the kernel.
func (r *Renderer) Plan(ctx context.Context, ir *compile.IR) (*knftables.Transaction, Stats, error) {
	p, err := r.plan(ctx, r.builder.build(ir))
	return p.tx, p.st, err
}

// plan is the way from what is programmed to what is wanted, twice: as
// one transaction (tx: all or nothing, for nft alone), and, after the first
// sync, in two phases for an element writer: adds (new sets, new and
// rewritten chains) through nft, then one netlink batch with every element
// change and the deletion of what the change leaves unused (old chains and
// sets). Traffic sees the change in one step, the batch: the additions are
// not referenced until it points pods at them. The phases keep element
// commands out of nft, which reads every element of the table before it
// runs one, and deletions out of their own transaction: a kernel
// transaction that deletes waits for an RCU grace period (10-30 ms here),
// and the batch waits for one anyway when it deletes an element.
type plan struct {
	tx       *knftables.Transaction
	deletes  *knftables.Transaction // tx, or a later one (DeleteLater)
	adds     *knftables.Transaction // nil on a first sync
	elements []elementOp
	unused   dataplane.Unused
	// fresh are the new table chains, whose rules tx has and adds has not
	// (writeAhead writes them).
	fresh []string
	// prefill is what run loads before tx on a full sync (see fill);
	// nil when tx carries everything.
	prefill *prefill
	want    *ruleset
	st      Stats
}

func (r *Renderer) plan(ctx context.Context, want *ruleset) (plan, error) {
	p := plan{tx: r.nft.NewTransaction(), want: want}
	p.deletes = p.tx
	if r.laterDeletes {
		p.deletes = r.nft.NewTransaction()
	}
	if r.programmed != nil && !sameBase(r.programmed, want) {
		r.programmed = nil // the base chains change: write them anew
	}
	if r.programmed == nil {
		if _, ok := r.elements.(SetFiller); ok {
			p.prefill = &prefill{sets: map[string]bool{}}
		}
		if err := r.reconcile(ctx, p.tx, p.deletes, want, p.prefill, &p.st); err != nil {
			return p, err
		}
		p.st.Full = true
	} else {
		p.adds = r.nft.NewTransaction()
		p.elements, p.unused, p.fresh = diff(p.tx, p.deletes, p.adds, r.programmed, want, &p.st)
	}
	p.st.Operations = p.tx.NumOperations()
	if p.deletes != p.tx {
		p.st.Operations += p.deletes.NumOperations()
	}
	return p, nil
}

// Sync brings the kernel to ir in one transaction: all of it or nothing.
func (r *Renderer) Sync(ctx context.Context, ir *compile.IR) (Stats, error) {
	want := r.builder.build(ir)
	p, err := r.plan(ctx, want)
	if err != nil {
		return p.st, err
	}
	if p.st.Operations > 0 {
		if err := r.run(ctx, &p); err != nil {
			// The kernel is unchanged, or holds the adds; forget what we
			// thought it held so the next Sync reconciles from what is
			// really there.
			r.programmed = nil
			return p.st, fmt.Errorf("nftables transaction (%d operations): %w", p.st.Operations, err)
		}
	}
	r.programmed = want
	return p.st, nil
}

// run applies a plan: in phases when there is an element writer and the
// plan changes elements, else as one nft transaction. When the batch fails
// the adds stay applied (nothing refers to them); the caller forgets what
// it programmed, and the next sync reconciles.
func (r *Renderer) run(ctx context.Context, p *plan) error {
	if p.prefill != nil {
		if err := r.fill(ctx, p); err != nil {
			return err
		}
	}
	if r.elements == nil || p.adds == nil || len(p.elements) == 0 {
		return r.runThenDelete(ctx, p)
	}
	els, ok := kernelElements(p.elements)
	if !ok {
		return r.runThenDelete(ctx, p)
	}
	p.st.Netlink = true
	if err := r.writeAhead(ctx, p); err != nil {
		return err
	}
	if p.adds.NumOperations() > 0 {
		if err := r.nft.Run(ctx, p.adds); err != nil {
			return err
		}
	}
	unused := p.unused
	if p.deletes != p.tx {
		unused = dataplane.Unused{}
	}
	if err := r.elements.Write(els, unused); err != nil {
		return fmt.Errorf("set elements over netlink: %w", err)
	}
	if p.deletes != p.tx && len(p.unused.Chains)+len(p.unused.Sets) > 0 {
		if err := r.elements.Write(nil, p.unused); err != nil {
			return fmt.Errorf("deleting what the change left unused: %w", err)
		}
	}
	return nil
}

// prefill is what a full sync loads before its transaction (fill).
type prefill struct {
	// sets are the selection sets, by name; true when the kernel has the
	// set already.
	sets map[string]bool
	// chains are the table chains (ruleset.tableChains), sorted.
	chains []string
}

// fill loads the bulk of a full sync before its transaction: the selection
// sets and the table chains, while nothing refers to what is new.
//
// Sets: nft needs ~3.6 KB an element to read a set from text (476 MB for
// the 130k elements of a node of the 30k cluster), the element writer a few
// dozen bytes, in batches of dataplane.FillBatch. A set the kernel lacks is
// declared first and filled while no rule refers to it; the sets it has (a
// restart, a resync) are emptied and refilled all in one batch, so that
// the rules that match them see every selection as of this pass at once.
// The old rules then meet the pods as they are now until the final
// transaction: the one moment a full sync is not one kernel transaction,
// and it errs no more open than the old rules with the pods of now.
//
// Chains: nft needs ~6.7 KB a rule (787 MB for the 117,826 rules of a node
// of the 150k cluster, whose 1,500 admin policies put hundreds of rules in
// each of its 164 tables), so the table chains go in transactions of about
// chainBatchRules rules, whole chains each. A table chain is named after
// its rules, so one the kernel has already holds them (or drifted: the
// rewrite, atomic per chain, repairs it), and only the verdict maps, which
// the final transaction switches, send packets to a new one.
func (r *Renderer) fill(ctx context.Context, p *plan) error {
	want, pf := p.want, p.prefill
	// Everything the chains and the batches name exists first; adding
	// what exists changes nothing.
	declare := r.nft.NewTransaction()
	declare.Add(table())
	for _, name := range sortedKeys(want.sets) {
		addContainer(declare, name, want.sets[name], false)
	}
	for _, name := range sortedKeys(want.maps) {
		addContainer(declare, name, want.maps[name], true)
	}
	for _, name := range sortedKeys(want.chains) {
		declare.Add(&knftables.Chain{Name: name})
	}
	if err := r.nft.Run(ctx, declare); err != nil {
		return fmt.Errorf("declaring sets, maps and chains: %w", err)
	}
	filler := r.elements.(SetFiller)
	var replaced map[string][]dataplane.Element // the sets the kernel has
	for _, name := range sortedKeys(pf.sets) {
		c := want.sets[name]
		ops := make([]elementOp, 0, len(c.elements))
		for _, key := range sortedKeys(c.elements) {
			ops = append(ops, elementOp{set: name, c: c, key: key})
		}
		els, ok := kernelElements(ops)
		if !ok {
			return fmt.Errorf("set %s: an element the element writer cannot encode", name)
		}
		p.st.Elements += len(els)
		if pf.sets[name] {
			if replaced == nil {
				replaced = map[string][]dataplane.Element{}
			}
			replaced[name] = els
			continue
		}
		if err := filler.Fill(name, els); err != nil {
			return fmt.Errorf("filling set %s over netlink: %w", name, err)
		}
	}
	// Live sets change together: one at a time, a pod moving from one
	// denied selection to another would be in neither for a moment.
	if err := filler.Replace(replaced); err != nil {
		return fmt.Errorf("refilling the sets the kernel has over netlink: %w", err)
	}
	p.st.Netlink = true
	for _, batch := range chainBatches(pf.chains, want.chains, r.batchRules()) {
		tx := r.nft.NewTransaction()
		for _, name := range batch {
			tx.Flush(&knftables.Chain{Name: name})
			writeChain(tx, name, want.chains[name], &p.st)
		}
		if err := r.nft.Run(ctx, tx); err != nil {
			return fmt.Errorf("writing table chains: %w", err)
		}
	}
	return nil
}

// writeAhead writes the new table chains of a change (plan.fresh) before
// its adds, in transactions of at most batchRules rules but the last,
// which rides with the adds: a change that makes every table new (a
// baseline policy all pods have) would give nft all the node's rules at
// once: 31,242 rules for a node of the 150k-pod cluster, at ~6.7 KB of
// nft's memory a rule. The sets, maps and chains the rules name are
// declared first. Nothing sends packets to these chains before the
// element batch does.
func (r *Renderer) writeAhead(ctx context.Context, p *plan) error {
	batches := chainBatches(p.fresh, p.want.chains, r.batchRules())
	if len(batches) > 1 {
		declare := r.nft.NewTransaction()
		for _, name := range sortedKeys(p.want.sets) {
			if _, ok := r.programmed.sets[name]; !ok {
				addContainer(declare, name, p.want.sets[name], false)
			}
		}
		for _, name := range sortedKeys(p.want.maps) {
			if _, ok := r.programmed.maps[name]; !ok {
				addContainer(declare, name, p.want.maps[name], true)
			}
		}
		// A table's first chain jumps to its others, which may come in
		// a later batch.
		for _, name := range p.fresh {
			declare.Add(&knftables.Chain{Name: name})
		}
		if err := r.nft.Run(ctx, declare); err != nil {
			return fmt.Errorf("declaring new sets, maps and chains: %w", err)
		}
	}
	for i, batch := range batches {
		tx := p.adds // the last batch
		if i < len(batches)-1 {
			tx = r.nft.NewTransaction()
		}
		for _, name := range batch {
			tx.Add(&knftables.Chain{Name: name})
			writeChain(tx, name, p.want.chains[name], &Stats{}) // counted by diff
		}
		if i < len(batches)-1 {
			if err := r.nft.Run(ctx, tx); err != nil {
				return fmt.Errorf("writing new table chains: %w", err)
			}
		}
	}
	return nil
}

// chainBatches cuts names into runs of whole chains of at most limit rules
// together (a chain longer than that is a run of its own).
func chainBatches(names []string, chains map[string][]rule, limit int) [][]string {
	var out [][]string
	for i := 0; i < len(names); {
		start, rules := i, 0
		for ; i < len(names) && (rules == 0 || rules+len(chains[names[i]]) <= limit); i++ {
			rules += max(len(chains[names[i]]), 1)
		}
		out = append(out, names[start:i])
	}
	return out
}

// chainBatchRules is about the most rules a transaction of table chains
// gives nft (a chain longer than that goes alone): ~35 MB of nft's memory.
const chainBatchRules = 5000

func (r *Renderer) batchRules() int {
	if r.chainBatch > 0 {
		return r.chainBatch
	}
	return chainBatchRules
}

// runThenDelete runs the plan's transaction, then its deletions when they
// go in a later one.
func (r *Renderer) runThenDelete(ctx context.Context, p *plan) error {
	if err := r.nft.Run(ctx, p.tx); err != nil {
		return err
	}
	if p.deletes != p.tx && p.deletes.NumOperations() > 0 {
		if err := r.nft.Run(ctx, p.deletes); err != nil {
			return fmt.Errorf("deleting what the change left unused: %w", err)
		}
	}
	return nil
}

// Size counts what a ruleset holds.
type Size struct {
	Chains   int `json:"chains"` // non-base chains
	Rules    int `json:"rules"`  // rules in them
	Sets     int `json:"sets"`   // sets and maps
	Elements int `json:"elements"`
}

// Programmed returns the size of what the last successful Sync loaded.
func (r *Renderer) Programmed() Size {
	var sz Size
	if r.programmed == nil {
		return sz
	}
	for _, rules := range r.programmed.chains {
		sz.Chains++
		sz.Rules += len(rules)
	}
	for _, cs := range []map[string]*container{r.programmed.sets, r.programmed.maps} {
		for _, c := range cs {
			sz.Sets++
			sz.Elements += len(c.elements)
		}
	}
	return sz
}

// Forget drops the renderer's memory of the kernel: the next Sync reads it.
func (r *Renderer) Forget() { r.programmed = nil }

// Ruleset returns the full table as one transaction text (what `nft -f`
// would load), for `netpol compile -o nft`. It is the transaction's own
// text: knftables' fake, which could dump it too, looks every element up
// in a list as it adds it, and an ipBlock of 2,000 exceptions (218,048
// elements) would take hours (100 of them took 68 s).
func Ruleset(ir *compile.IR) (string, error) {
	fake := knftables.NewFake(knftables.InetFamily, TableName) // a context for the text, never run
	tx := fake.NewTransaction()
	var st Stats
	writeAll(tx, build(ir), &st)
	text := tx.String()
	// knftables keeps the first invalid operation's error to itself and
	// ends the text with it, on a line of its own.
	lines := strings.TrimSuffix(text, "\n")
	if last := lines[strings.LastIndex(lines, "\n")+1:]; strings.HasPrefix(last, "# ERROR: ") {
		return "", errors.New(strings.TrimPrefix(last, "# ERROR: "))
	}
	return text, nil
}

// Text writes an IR as the nftables ruleset that Ruleset returns
// (compile.Renderer).
type Text struct{}

var _ compile.Renderer = Text{}

// Render writes the ruleset of ir to w.
func (Text) Render(w io.Writer, ir *compile.IR) error {
	text, err := Ruleset(ir)
	if err != nil {
		return fmt.Errorf("rendering nftables: %w", err)
	}
	_, err = io.WriteString(w, text)
	return err
}

// reconcile replaces whatever the kernel holds in netpol's table with want,
// atomically: the base chains keep existing throughout (so no packet ever
// sees an open window), stale chains and sets are deleted.
//
// With pf (not nil), the selection sets and the table chains of want are
// left to fill (see prefill): they are neither emptied nor written here,
// and pf says which they are.
func (r *Renderer) reconcile(ctx context.Context, tx, deletes *knftables.Transaction, want *ruleset, pf *prefill, st *Stats) error {
	have, _, err := r.objectNames(ctx) // a table that is gone has nothing
	if err != nil {
		return err
	}
	var filled map[string]bool // sets
	if pf != nil {
		for name, c := range want.sets {
			if c.selection {
				pf.sets[name] = false
			}
		}
		for _, name := range have["set"] {
			if _, ok := pf.sets[name]; ok {
				pf.sets[name] = true
			}
		}
		filled = pf.sets
		// A table chain's name stands for its rules but for one thing:
		// whether a drop goes to the record (--record). When that changed
		// since the kernel's table was written, a chain of the same name
		// the kernel has holds other drops, so it is rewritten with the
		// switch, not before it.
		recordChanged := slices.Contains(have["chain"], chainRecordDeny) != want.record
		haveChain := map[string]bool{}
		for _, name := range have["chain"] {
			haveChain[name] = true
		}
		for name := range want.tableChains {
			if !recordChanged || !haveChain[name] {
				pf.chains = append(pf.chains, name)
			}
		}
		slices.Sort(pf.chains)
	}
	// Empty everything first so that deletions never meet a reference
	// (but the table chains that fill has written).
	tx.Add(&knftables.Table{})
	for _, name := range have["chain"] {
		if pf == nil || !slices.Contains(pf.chains, name) {
			tx.Flush(&knftables.Chain{Name: name})
		}
	}
	for _, name := range have["map"] {
		tx.Flush(&knftables.Map{Name: name})
	}
	for _, name := range have["set"] {
		// Held connections stay held across restarts, and what DNS
		// answers taught stays learned.
		if _, ok := filled[name]; !ok && !isCutSet(name) && !isDomainSet(name) {
			tx.Flush(&knftables.Set{Name: name})
		}
	}
	writeBase(tx)
	writeContent(tx, want, pf, st)
	writeBaseRules(tx, want)
	for _, name := range have["chain"] {
		if _, ok := want.chains[name]; !ok && !isBase(name) {
			deletes.Delete(&knftables.Chain{Name: name})
		}
	}
	for _, name := range have["map"] {
		if _, ok := want.maps[name]; !ok {
			deletes.Delete(&knftables.Map{Name: name})
		}
	}
	for _, name := range have["set"] {
		if _, ok := want.sets[name]; !ok && !isCutSet(name) {
			deletes.Delete(&knftables.Set{Name: name})
		}
	}
	return nil
}

// baseChains are the chains hooked into the kernel, in the order
// writeBase declares them.
var baseChains = []string{chainPrerouting, chainForward, chainInput, chainOutput}

func isBase(name string) bool { return slices.Contains(baseChains, name) }

// sameBase reports whether two rulesets have the same base chain rules.
func sameBase(a, b *ruleset) bool {
	return a.record == b.record && slices.Equal(a.podInterfaces, b.podInterfaces)
}

// isDomainSet reports whether a set of the table is a domain set
// (compile.DomainSet, with -4 or -6 after its name), whose elements the
// agent learns.
func isDomainSet(name string) bool { return strings.HasPrefix(name, compile.DomainSetPrefix) }

// writeAll writes a whole table from nothing.
func writeAll(tx *knftables.Transaction, want *ruleset, st *Stats) {
	writeBase(tx)
	writeContent(tx, want, nil, st)
	writeBaseRules(tx, want)
}

// writeBase declares the table and its base chains, emptied: their rules
// never change, but a restart must not trust what it finds.
func writeBase(tx *knftables.Transaction) {
	tx.Add(table())
	filter, forward, input, output, prio := knftables.FilterType, knftables.ForwardHook, knftables.InputHook, knftables.OutputHook, knftables.FilterPriority
	prerouting, early := knftables.PreroutingHook, podCheckPriority
	accept := knftables.AcceptPolicy
	for _, c := range []*knftables.Chain{
		{Name: chainPrerouting, Type: &filter, Hook: &prerouting, Priority: &early, Policy: &accept},
		{Name: chainForward, Type: &filter, Hook: &forward, Priority: &prio, Policy: &accept},
		{Name: chainInput, Type: &filter, Hook: &input, Priority: &prio, Policy: &accept},
		{Name: chainOutput, Type: &filter, Hook: &output, Priority: &prio, Policy: &accept},
	} {
		tx.Add(c)
		tx.Flush(c)
	}
	writeCutSets(tx)
}

// writeBaseRules fills the base chains, once the chains they jump to exist:
// packets from pod interfaces are checked before conntrack sees them
// (prerouting, pods.go), held connections are dropped, packets to pod
// interfaces checked, then everything is judged by the pods' rules; with record, what gets past
// both directions is recorded as allowed. The node's own packets (output)
// meet only the holds: node-originated traffic is allowed, but must not
// re-open a connection a policy cut.
func writeBaseRules(tx ops, want *ruleset) {
	for _, chain := range []string{chainForward, chainInput, chainOutput} {
		tx.Add(&knftables.Rule{Chain: chain, Rule: "ct state established,related accept"})
		writeCutRules(tx, chain)
	}
	tx.Add(&knftables.Rule{Chain: chainInput, Rule: neighbourDiscovery + " accept",
		Comment: knftables.PtrTo("IPv6 neighbour discovery with the node is link plumbing, as ARP is")})
	writePodRules(tx, want)
	tx.Add(&knftables.Rule{Chain: chainForward, Rule: "jump " + chainEgress})
	tx.Add(&knftables.Rule{Chain: chainForward, Rule: "jump " + chainIngress})
	tx.Add(&knftables.Rule{Chain: chainInput, Rule: "jump " + chainEgress,
		Comment: knftables.PtrTo("pods talking to this node's own addresses")})
	if want.record {
		for _, chain := range []string{chainForward, chainInput} {
			tx.Add(&knftables.Rule{Chain: chain, Rule: "ct state new jump " + chainRecord})
		}
	}
}

// table is netpol's table as every transaction declares it.
func table() *knftables.Table {
	return &knftables.Table{Comment: knftables.PtrTo("netpol: Kubernetes network policy for the pods of this node")}
}

// writeContent adds every set, map and chain of want (into a table whose
// objects are empty or absent). Declarations come first: rules name sets
// and maps, and map elements jump to chains. With pf, the selection sets
// have their elements and the table chains their rules already
// (Renderer.fill).
func writeContent(tx *knftables.Transaction, want *ruleset, pf *prefill, st *Stats) {
	var filled map[string]bool
	if pf != nil {
		filled = pf.sets
	}
	for _, name := range sortedKeys(want.sets) {
		addContainer(tx, name, want.sets[name], false)
	}
	for _, name := range sortedKeys(want.chains) {
		tx.Add(&knftables.Chain{Name: name})
	}
	for _, name := range sortedKeys(want.maps) {
		addContainer(tx, name, want.maps[name], true)
	}
	for _, name := range sortedKeys(want.chains) {
		if pf == nil || !slices.Contains(pf.chains, name) {
			writeChain(tx, name, want.chains[name], st)
		}
	}
	addElements(tx, want.sets, false, filled, st)
	addElements(tx, want.maps, true, nil, st)
}

func addElements(tx *knftables.Transaction, cs map[string]*container, isMap bool, filled map[string]bool, st *Stats) {
	for _, name := range sortedKeys(cs) {
		if _, ok := filled[name]; ok {
			continue
		}
		for _, key := range sortedKeys(cs[name].elements) {
			tx.Add(element(name, isMap, key, cs[name].elements[key]))
			st.Elements++
		}
	}
}

// ops receives transaction operations: a *knftables.Transaction, or both
// (fanning out to several).
type ops interface {
	Add(knftables.Object)
	Flush(knftables.Object)
	Delete(knftables.Object)
}

// both writes every operation to the whole transaction and to the adds
// phase.
type both [2]*knftables.Transaction

func (b both) Add(o knftables.Object)    { b[0].Add(o); b[1].Add(o) }
func (b both) Flush(o knftables.Object)  { b[0].Flush(o); b[1].Flush(o) }
func (b both) Delete(o knftables.Object) { b[0].Delete(o); b[1].Delete(o) }

// diff writes the transaction from have to want into tx, and the adds
// phase into adds, returning the element changes (which are in tx too) and
// the chains and sets that want no longer has (deleted at the end of tx).
// Order matters within tx: new sets and chains exist before anything refers
// to them, and old ones are deleted after the last reference is gone.
func diff(tx, deletes, adds *knftables.Transaction, have, want *ruleset, st *Stats) (elements []elementOp, unused dataplane.Unused, fresh []string) {
	toAdds := both{tx, adds}
	for _, name := range sortedKeys(want.sets) {
		if _, ok := have.sets[name]; !ok {
			addContainer(toAdds, name, want.sets[name], false)
		}
	}
	for _, name := range sortedKeys(want.chains) {
		if _, ok := have.chains[name]; !ok {
			toAdds.Add(&knftables.Chain{Name: name})
		}
	}
	// The staged maps come and go (audit.go); the others always exist.
	for _, name := range sortedKeys(want.maps) {
		if _, ok := have.maps[name]; !ok {
			addContainer(toAdds, name, want.maps[name], true)
		}
	}
	for _, name := range sortedKeys(want.chains) {
		old, ok := have.chains[name]
		if ok && slices.Equal(old, want.chains[name]) {
			continue
		}
		if !ok && want.tableChains[name] {
			// A new table chain: nothing sends packets to it before the
			// change does, so run writes it ahead of adds, in batches
			// (writeAhead); tx, for nft alone, writes it too.
			writeChain(tx, name, want.chains[name], st)
			fresh = append(fresh, name)
			continue
		}
		if ok {
			toAdds.Flush(&knftables.Chain{Name: name})
		}
		writeChain(toAdds, name, want.chains[name], st)
	}
	elements = diffElements(elements, tx, have.maps, want.maps, true, st)
	elements = diffElements(elements, tx, have.sets, want.sets, false, st)
	sets, maps := absent(have.sets, want.sets), absent(have.maps, want.maps)
	unused = dataplane.Unused{Chains: absent(have.chains, want.chains), Sets: append(slices.Clip(sets), maps...)}
	// Emptied first, so that no rule of one refers to another or to a set.
	for _, name := range unused.Chains {
		deletes.Flush(&knftables.Chain{Name: name})
	}
	for _, name := range unused.Chains {
		deletes.Delete(&knftables.Chain{Name: name})
	}
	for _, name := range sets {
		deletes.Delete(&knftables.Set{Name: name})
	}
	for _, name := range maps {
		deletes.Delete(&knftables.Map{Name: name})
	}
	return elements, unused, fresh
}

// absent returns the keys of have that want lacks, sorted.
func absent[V any](have, want map[string]V) []string {
	var out []string
	for name := range have {
		if _, ok := want[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// diffElements adds and deletes elements of the sets or maps of want, and
// appends the same operations to ops. A map element whose value changed is
// replaced (deleted, then added). Only the changed keys are sorted: a pass
// that moves one pod must not sort every element of the table.
func diffElements(ops []elementOp, tx *knftables.Transaction, have, want map[string]*container, isMap bool, st *Stats) []elementOp {
	for _, name := range sortedKeys(want) {
		old := have[name]
		if old == want[name] {
			continue // the same container: built once, never modified
		}
		if old == nil {
			old = &container{}
		}
		var gone, added []string
		for key, v := range old.elements {
			if w, ok := want[name].elements[key]; !ok || w != v {
				gone = append(gone, key)
			}
		}
		for key, v := range want[name].elements {
			if o, ok := old.elements[key]; !ok || o != v {
				added = append(added, key)
			}
		}
		slices.Sort(gone)
		slices.Sort(added)
		for _, key := range gone {
			tx.Delete(element(name, isMap, key, old.elements[key]))
			ops = append(ops, elementOp{set: name, c: old, delete: true, key: key, value: old.elements[key]})
		}
		for _, key := range added {
			tx.Add(element(name, isMap, key, want[name].elements[key]))
			ops = append(ops, elementOp{set: name, c: want[name], key: key, value: want[name].elements[key]})
		}
		st.Elements += len(gone) + len(added)
	}
	return ops
}

func writeChain(tx ops, name string, rules []rule, st *Stats) {
	st.Chains++
	for _, r := range rules {
		kr := &knftables.Rule{Chain: name, Rule: r.text}
		if r.comment != "" {
			kr.Comment = knftables.PtrTo(commentText(r.comment))
		}
		tx.Add(kr)
	}
}

func addContainer(tx ops, name string, c *container, isMap bool) {
	var flags []knftables.SetFlag
	if c.interval {
		flags = append(flags, knftables.IntervalFlag)
	}
	if c.learned {
		flags = append(flags, knftables.TimeoutFlag)
	}
	var timeout *time.Duration
	var size *uint64
	if c.dynamic {
		flags = append(flags, knftables.DynamicFlag, knftables.TimeoutFlag)
		timeout, size = &c.timeout, &c.size
	}
	var comment *string
	if c.comment != "" {
		comment = knftables.PtrTo(commentText(c.comment))
	}
	if isMap {
		tx.Add(&knftables.Map{Name: name, Type: c.typ, Flags: flags, Comment: comment})
	} else {
		tx.Add(&knftables.Set{Name: name, Type: c.typ, Flags: flags, Timeout: timeout, Size: size, Comment: comment})
	}
}

func element(container string, isMap bool, key, value string) *knftables.Element {
	e := &knftables.Element{Key: []string{key}}
	if isMap {
		e.Map, e.Value = container, []string{value}
	} else {
		e.Set = container
	}
	return e
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
