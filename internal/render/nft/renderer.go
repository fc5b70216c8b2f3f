package nft

import (
	"context"
	"fmt"
	"maps"
	"slices"

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
	nft knftables.Interface
	// programmed is what the kernel holds, nil until the first successful
	// Sync: the last IR's objects and the leftovers.
	programmed *ruleset
	// leftovers are chains, sets and maps of earlier IRs that the kernel
	// still holds although nothing refers to them any more (see plan).
	leftovers leftovers
	builder   builder
	elements  ElementWriter
}

// leftovers name unreferenced objects by kind: "chain", "set", "map".
type leftovers map[string]map[string]bool

func (l leftovers) count() int { return len(l["chain"]) + len(l["set"]) + len(l["map"]) }

// objects returns the objects of rs that l names.
func (l leftovers) objects(rs *ruleset) *ruleset {
	return withLeftovers(newRuleset(), rs, l)
}

// ElementWriter writes set and map elements in one kernel transaction
// without the nft binary (dataplane.Elements).
type ElementWriter interface {
	Write([]dataplane.Element) error
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
	// Collected counts the leftovers of earlier changes that this one
	// deleted; Left the unreferenced chains, sets and maps that the kernel
	// holds after it (see plan).
	Collected int `json:"collected,omitempty"`
	Left      int `json:"left,omitempty"`
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
// sync, in phases for an element writer: adds (new sets, new and rewritten
// chains) through nft, then every element change in one netlink batch.
// Traffic sees the change in one step, the element batch: the additions are
// not referenced until it points pods at them. The phases keep element
// commands out of nft, which reads every element of the table before it
// runs one.
//
// What the change leaves unreferenced (old chains and sets) is not deleted
// at once: it is a leftover, deleted by Collect when the agent is idle, or
// by the adds phase of a later change once there are more than
// maxLeftovers. Deleting is slow whatever the table's size — the kernel
// waits for packets in flight to leave the chains, ~10-20 ms per
// transaction here — and a change should not wait for it: a policy change
// then costs one nft run, and a change that only moves pods none.
type plan struct {
	tx       *knftables.Transaction
	adds     *knftables.Transaction // nil on a first sync
	elements []elementOp
	// collected are the leftovers the adds phase deletes; left are those
	// the phases leave in the kernel, this change's included.
	collected, left leftovers
	have            *ruleset // what the kernel held before
	st              Stats
}

// maxLeftovers bounds the unreferenced objects left in the kernel during a
// burst of changes with no idle time between them: past it the next change
// deletes them.
const maxLeftovers = 64

func (r *Renderer) plan(ctx context.Context, want *ruleset) (plan, error) {
	p := plan{tx: r.nft.NewTransaction(), have: r.programmed}
	if r.programmed == nil {
		if err := r.reconcile(ctx, p.tx, want, &p.st); err != nil {
			return p, err
		}
	} else {
		p.adds = r.nft.NewTransaction()
		collect := r.leftovers.count() > maxLeftovers
		p.elements, p.collected, p.left = diff(p.tx, p.adds, r.programmed, want, r.leftovers, collect, &p.st)
	}
	p.st.Operations = p.tx.NumOperations()
	return p, nil
}

// Sync brings the kernel to ir in one transaction: all of it or nothing.
func (r *Renderer) Sync(ctx context.Context, ir *compile.IR) (Stats, error) {
	want := r.builder.build(ir)
	p, err := r.plan(ctx, want)
	if err != nil {
		return p.st, err
	}
	if p.st.Operations == 0 {
		r.programmed = want // equal, and its containers are the ones the next build reuses
		return p.st, nil
	}
	phased, err := r.run(ctx, &p)
	if err != nil {
		// The kernel is unchanged, or a phase of it is applied; forget what
		// we thought it held so the next Sync reconciles from what is
		// really there.
		r.programmed, r.leftovers = nil, nil
		return p.st, fmt.Errorf("nftables transaction (%d operations): %w", p.st.Operations, err)
	}
	if !phased { // the one transaction deleted every object want lacks
		p.collected, p.left = unwanted(r.leftovers.objects(r.programmed), want), nil
	}
	p.st.Collected, p.st.Left = p.collected.count(), p.left.count()
	r.programmed, r.leftovers = want, nil
	if p.left.count() > 0 {
		r.programmed, r.leftovers = withLeftovers(want, p.have, p.left), p.left
	}
	return p.st, nil
}

// Collect deletes the leftovers of earlier changes (an agent calls it when
// it is idle).
func (r *Renderer) Collect(ctx context.Context) error {
	if r.programmed == nil || r.leftovers.count() == 0 {
		return nil
	}
	tx := r.nft.NewTransaction()
	deleteObjects(tx, r.leftovers)
	if err := r.nft.Run(ctx, tx); err != nil {
		r.programmed, r.leftovers = nil, nil
		return fmt.Errorf("deleting unreferenced nftables objects: %w", err)
	}
	r.programmed, r.leftovers = without(r.programmed, r.leftovers), nil
	return nil
}

// run applies a plan: in phases when there is an element writer and the
// plan changes elements, else as one nft transaction; it reports whether
// it ran the phases. When the element phase fails the adds stay applied;
// the caller forgets what it programmed, and the next sync reconciles.
func (r *Renderer) run(ctx context.Context, p *plan) (phased bool, err error) {
	if r.elements == nil || p.adds == nil || len(p.elements) == 0 {
		return false, r.nft.Run(ctx, p.tx)
	}
	els, ok := kernelElements(p.elements)
	if !ok {
		return false, r.nft.Run(ctx, p.tx)
	}
	p.st.Netlink = true
	if p.adds.NumOperations() > 0 {
		if err := r.nft.Run(ctx, p.adds); err != nil {
			return true, err
		}
	}
	if err := r.elements.Write(els); err != nil {
		return true, fmt.Errorf("set elements over netlink: %w", err)
	}
	return true, nil
}

// withLeftovers returns want plus the objects of have that left names: what
// the kernel holds after a phased change.
func withLeftovers(want, have *ruleset, left leftovers) *ruleset {
	rs := &ruleset{chains: maps.Clone(want.chains), sets: maps.Clone(want.sets), maps: maps.Clone(want.maps)}
	for name := range left["chain"] {
		rs.chains[name] = have.chains[name]
	}
	for name := range left["set"] {
		rs.sets[name] = have.sets[name]
	}
	for name := range left["map"] {
		rs.maps[name] = have.maps[name]
	}
	return rs
}

// without returns rs less the objects that names lists.
func without(rs *ruleset, names leftovers) *ruleset {
	out := &ruleset{chains: maps.Clone(rs.chains), sets: maps.Clone(rs.sets), maps: maps.Clone(rs.maps)}
	for name := range names["chain"] {
		delete(out.chains, name)
	}
	for name := range names["set"] {
		delete(out.sets, name)
	}
	for name := range names["map"] {
		delete(out.maps, name)
	}
	return out
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
// would load), for `netpol compile -o nft`.
func Ruleset(ir *compile.IR) (string, error) {
	fake := knftables.NewFake(knftables.InetFamily, TableName)
	tx := fake.NewTransaction()
	var st Stats
	writeAll(tx, build(ir), &st)
	if err := fake.Run(context.Background(), tx); err != nil {
		return "", err
	}
	return fake.Dump(), nil
}

// reconcile replaces whatever the kernel holds in netpol's table with want,
// atomically: the base chains keep existing throughout (so no packet ever
// sees an open window), stale chains and sets are deleted.
func (r *Renderer) reconcile(ctx context.Context, tx *knftables.Transaction, want *ruleset, st *Stats) error {
	have := map[string][]string{}
	for _, kind := range []string{"chain", "set", "map"} {
		names, err := r.nft.List(ctx, kind)
		if err != nil && !knftables.IsNotFound(err) {
			return fmt.Errorf("listing nftables %ss: %w", kind, err)
		}
		have[kind] = names
	}
	// Empty everything first so that deletions never meet a reference.
	tx.Add(&knftables.Table{})
	for _, name := range have["chain"] {
		tx.Flush(&knftables.Chain{Name: name})
	}
	for _, name := range have["map"] {
		tx.Flush(&knftables.Map{Name: name})
	}
	for _, name := range have["set"] {
		tx.Flush(&knftables.Set{Name: name})
	}
	for _, name := range have["chain"] {
		if _, ok := want.chains[name]; !ok && !isBase(name) {
			tx.Delete(&knftables.Chain{Name: name})
		}
	}
	for _, name := range have["map"] {
		if _, ok := want.maps[name]; !ok {
			tx.Delete(&knftables.Map{Name: name})
		}
	}
	for _, name := range have["set"] {
		if _, ok := want.sets[name]; !ok {
			tx.Delete(&knftables.Set{Name: name})
		}
	}
	writeBase(tx)
	writeContent(tx, want, st)
	writeBaseRules(tx)
	return nil
}

func isBase(name string) bool { return name == chainForward || name == chainInput }

// writeAll writes a whole table from nothing.
func writeAll(tx *knftables.Transaction, want *ruleset, st *Stats) {
	writeBase(tx)
	writeContent(tx, want, st)
	writeBaseRules(tx)
}

// writeBase declares the table and its base chains, emptied: their rules
// never change, but a restart must not trust what it finds.
func writeBase(tx *knftables.Transaction) {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("netpol: Kubernetes network policy for the pods of this node")})
	filter, forward, input, prio := knftables.FilterType, knftables.ForwardHook, knftables.InputHook, knftables.FilterPriority
	accept := knftables.AcceptPolicy
	for _, c := range []*knftables.Chain{
		{Name: chainForward, Type: &filter, Hook: &forward, Priority: &prio, Policy: &accept},
		{Name: chainInput, Type: &filter, Hook: &input, Priority: &prio, Policy: &accept},
	} {
		tx.Add(c)
		tx.Flush(c)
	}
}

// writeBaseRules fills the base chains, once the chains they jump to exist.
func writeBaseRules(tx *knftables.Transaction) {
	tx.Add(&knftables.Rule{Chain: chainForward, Rule: "ct state established,related accept"})
	tx.Add(&knftables.Rule{Chain: chainForward, Rule: "jump " + chainEgress})
	tx.Add(&knftables.Rule{Chain: chainForward, Rule: "jump " + chainIngress})
	tx.Add(&knftables.Rule{Chain: chainInput, Rule: "ct state established,related accept"})
	tx.Add(&knftables.Rule{Chain: chainInput, Rule: "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } accept",
		Comment: knftables.PtrTo("IPv6 neighbour discovery with the node is link plumbing, as ARP is")})
	tx.Add(&knftables.Rule{Chain: chainInput, Rule: "jump " + chainEgress,
		Comment: knftables.PtrTo("pods talking to this node's own addresses")})
}

// writeContent adds every set, map and chain of want (into a table whose
// objects are empty or absent). Declarations come first: rules name sets
// and maps, and map elements jump to chains.
func writeContent(tx *knftables.Transaction, want *ruleset, st *Stats) {
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
		writeChain(tx, name, want.chains[name], st)
	}
	addElements(tx, want.sets, false, st)
	addElements(tx, want.maps, true, st)
}

func addElements(tx *knftables.Transaction, cs map[string]*container, isMap bool, st *Stats) {
	for _, name := range sortedKeys(cs) {
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
// phase into adds, returning the element changes (which are in tx too), the
// leftovers the adds phase deletes — those of old, when collect — and the
// objects left in the kernel after the phases: the other leftovers and what
// this change stops referring to. Order matters within tx: new sets and
// chains exist before anything refers to them, and old ones are deleted
// after the last reference is gone.
func diff(tx, adds *knftables.Transaction, have, want *ruleset, old leftovers, collect bool, st *Stats) (elements []elementOp, collected, left leftovers) {
	gone := unwanted(have, want)
	collected, left = leftovers{}, leftovers{}
	for kind, names := range gone {
		for name := range names {
			into := left
			if collect && old[kind][name] {
				into = collected
			}
			if into[kind] == nil {
				into[kind] = map[string]bool{}
			}
			into[kind][name] = true
		}
	}
	deleteObjects(adds, collected) // nothing has referred to them since the last change
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
		if ok {
			toAdds.Flush(&knftables.Chain{Name: name})
		}
		writeChain(toAdds, name, want.chains[name], st)
	}
	elements = diffElements(elements, tx, have.maps, want.maps, true, st)
	elements = diffElements(elements, tx, have.sets, want.sets, false, st)
	deleteObjects(tx, gone)
	return elements, collected, left
}

// unwanted names the objects of have that want lacks.
func unwanted(have, want *ruleset) leftovers {
	out := leftovers{}
	add := func(kind, name string) {
		if out[kind] == nil {
			out[kind] = map[string]bool{}
		}
		out[kind][name] = true
	}
	for name := range have.chains {
		if _, ok := want.chains[name]; !ok {
			add("chain", name)
		}
	}
	for name := range have.sets {
		if _, ok := want.sets[name]; !ok {
			add("set", name)
		}
	}
	for name := range have.maps {
		if _, ok := want.maps[name]; !ok {
			add("map", name)
		}
	}
	return out
}

// deleteObjects deletes the chains, sets and maps that names lists, which
// nothing outside them refers to: chains are emptied first, so that their
// rules no longer refer to each other or to the sets.
func deleteObjects(tx ops, names leftovers) {
	for _, name := range sortedKeys(names["chain"]) {
		tx.Flush(&knftables.Chain{Name: name})
	}
	for _, name := range sortedKeys(names["chain"]) {
		tx.Delete(&knftables.Chain{Name: name})
	}
	for _, name := range sortedKeys(names["set"]) {
		tx.Delete(&knftables.Set{Name: name})
	}
	for _, name := range sortedKeys(names["map"]) {
		tx.Delete(&knftables.Map{Name: name})
	}
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
			kr.Comment = knftables.PtrTo(truncate(r.comment, knftables.CommentLengthMax))
		}
		tx.Add(kr)
	}
}

func addContainer(tx ops, name string, c *container, isMap bool) {
	var flags []knftables.SetFlag
	if c.interval {
		flags = append(flags, knftables.IntervalFlag)
	}
	var comment *string
	if c.comment != "" {
		comment = knftables.PtrTo(truncate(c.comment, knftables.CommentLengthMax))
	}
	if isMap {
		tx.Add(&knftables.Map{Name: name, Type: c.typ, Flags: flags, Comment: comment})
	} else {
		tx.Add(&knftables.Set{Name: name, Type: c.typ, Flags: flags, Comment: comment})
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
