package nft

import (
	"fmt"

	"github.com/netpol/netpol/internal/compile"
)

// Audit in the kernel. A rule whose decision is logged does not end in its
// verdict but in "goto log-<id>", a chain of two rules shared by every table
// that logs the same decision:
//
//	log-<id>: limit rate 50/second burst 100 packets log prefix "np:<id>:" group 100
//	          drop                  (or return: allow, would-deny, would-allow;
//	                                 goto record-deny when recording: record.go)
//
// The limit guards the log alone: past it the first rule does not match and
// the verdict still applies. Only new connections reach a table chain
// (established and related traffic is accepted first), so a log line is a
// connection attempt, not a packet of an established one (a one-way flow
// stays new until a reply: the agent folds repeats, package audit).
//
// Staged policies decide in log-only tables (compile.Table.LogOnly), reached
// through the maps staged-ingress-4/-6 and staged-egress-4/-6 before the
// enforced tables: every rule of them returns, so they log and never decide.
// The maps exist only while some local pod has a log-only table.

// LogGroup is the netfilter log group (NFLOG) that audited decisions go to;
// the agent reads it (package dataplane/nflog).
const LogGroup = 100

// Kernel rate limit of each logged decision.
const logLimit = "limit rate 50/second burst 100 packets"

// ruleVerdict is the verdict statement of rule r of table t; drop is the
// one that denies (tableChains).
func ruleVerdict(chains map[string][]rule, t *compile.Table, r compile.Rule, rest, drop string) string {
	if r.Action == compile.Pass {
		return "goto " + rest
	}
	verdict := "return"
	if r.Action == compile.Drop && !t.LogOnly {
		verdict = drop
	}
	return logVerdict(chains, r.Audit, verdict)
}

// logVerdict returns verdict, or when a is set the goto to a's log chain
// (added to chains on first use) that logs and then applies verdict.
func logVerdict(chains map[string][]rule, a *compile.Audit, verdict string) string {
	if a == nil {
		return verdict
	}
	name := "log-" + a.ID
	if _, ok := chains[name]; !ok {
		chains[name] = []rule{
			{text: fmt.Sprintf("%s log prefix %q group %d", logLimit, a.LogPrefix(), LogGroup), comment: string(a.Verdict)},
			{text: verdict},
		}
	}
	return "goto " + name
}

// stagedMaps adds the verdict maps of the log-only tables and the rules
// that look them up, ahead of the enforced lookup.
func stagedMaps(rs *ruleset, ir *compile.IR) {
	staged := false
	for _, p := range ir.Pods {
		staged = staged || p.StagedIngress != "" || p.StagedEgress != ""
	}
	if !staged {
		return
	}
	verdictMaps(rs, ir, "staged-", func(p compile.LocalPod) (string, string) { return p.StagedIngress, p.StagedEgress })
}
