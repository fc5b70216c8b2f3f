package nft

import (
	"context"
	"fmt"

	"sigs.k8s.io/knftables"
)

// Verify compares the kernel's table with what the renderer last
// programmed and describes the first difference it finds ("" when none).
// The kernel is not netpol's alone: a firewall reload or `nft flush
// ruleset` empties it, and the renderer's diffs, made against its memory,
// would never notice. The check is cheap enough to run whenever the
// ruleset's generation moves (dataplane.Generation): the table, every
// chain, set and map programmed, the base chains' rules, the rules of
// record-deny (which holds every drop of a recording node), and the
// verdict maps' elements (which point each local pod at its rules). A
// rule or element removed from inside a policy chain or an address set is
// not seen here; the agent's periodic full resync repairs those.
func (r *Renderer) Verify(ctx context.Context) (string, error) {
	want := r.programmed
	if want == nil {
		return "", nil // the next Sync reads the kernel anyway
	}
	names, gone, err := r.objectNames(ctx)
	if err != nil {
		return "", err
	}
	if gone {
		return "table inet " + TableName + " is gone", nil
	}
	have := map[string]map[string]bool{}
	for kind, list := range names {
		have[kind] = map[string]bool{}
		for _, n := range list {
			have[kind][n] = true
		}
	}
	for _, name := range append(sortedKeys(want.chains), baseChains...) {
		if !have["chain"][name] {
			return "chain " + name + " is gone", nil
		}
	}
	for _, name := range append(sortedKeys(want.sets), cutSets...) {
		if !have["set"][name] {
			return "set " + name + " is gone", nil
		}
	}
	for _, name := range sortedKeys(want.maps) {
		if !have["map"][name] {
			return "map " + name + " is gone", nil
		}
	}
	wantRules := ruleCount{}
	writeBaseRules(wantRules, want)
	for _, chain := range baseChains {
		rules, err := r.nft.ListRules(ctx, chain)
		if err != nil {
			return "", fmt.Errorf("listing the rules of %s: %w", chain, err)
		}
		if len(rules) != wantRules[chain] {
			return fmt.Sprintf("base chain %s has %d rules, want %d", chain, len(rules), wantRules[chain]), nil
		}
	}
	// When recording, every deny of the node ends in record-deny: emptied,
	// every one would return and be accepted. (An audited decision's log
	// chain holds its drop the same way, for its own rules; there can be
	// hundreds, and each listing is an nft run of milliseconds on a large
	// table, so they are left to the periodic resync.)
	if rules, ok := want.chains[chainRecordDeny]; ok {
		have, err := r.nft.ListRules(ctx, chainRecordDeny)
		if err != nil {
			return "", fmt.Errorf("listing the rules of %s: %w", chainRecordDeny, err)
		}
		if len(have) != len(rules) {
			return fmt.Sprintf("chain %s has %d rules, want %d", chainRecordDeny, len(have), len(rules)), nil
		}
	}
	for _, name := range []string{"ingress-4", "ingress-6", "egress-4", "egress-6"} {
		els, err := r.nft.ListElements(ctx, "map", name)
		if err != nil {
			return "", fmt.Errorf("listing the elements of %s: %w", name, err)
		}
		if n := len(want.maps[name].elements); len(els) != n {
			return fmt.Sprintf("verdict map %s has %d elements, want %d", name, len(els), n), nil
		}
	}
	return "", nil
}

// ruleCount counts the rules added per chain.
type ruleCount map[string]int

func (c ruleCount) Add(o knftables.Object) {
	if r, ok := o.(*knftables.Rule); ok {
		c[r.Chain]++
	}
}
func (ruleCount) Flush(knftables.Object)  {}
func (ruleCount) Delete(knftables.Object) {}

// TableExists reports whether the kernel holds netpol's table with any
// chain in it: a node whose agent never programmed has none.
func (r *Renderer) TableExists(ctx context.Context) (bool, error) {
	if r.programmed != nil {
		return true, nil
	}
	chains, err := r.nft.List(ctx, "chain")
	if knftables.IsNotFound(err) {
		return false, nil
	}
	return len(chains) > 0, err
}
