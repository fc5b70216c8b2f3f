package compile

import (
	"fmt"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/policy"
)

// Audit identifies a logged decision. The kernel tags every logged packet
// with the ID; the agent maps the ID back to the rest to write the audit
// line. The ID is a hash of the rest, so it is the same on every node and
// after every restart, and a chain that logs changes only when what it logs
// changes.
type Audit struct {
	ID         string       `json:"id"`
	Verdict    Verdict      `json:"verdict"`
	Direction  string       `json:"direction"`
	Tier       string       `json:"tier"`
	Policy     *policy.Ref  `json:"policy,omitempty"`
	Rule       string       `json:"rule,omitempty"`
	IsolatedBy []policy.Ref `json:"isolatedBy,omitempty"`
}

// Verdict is what a logged decision did to the connection in its direction.
type Verdict string

const (
	VerdictAllow      Verdict = "allow"
	VerdictDeny       Verdict = "deny"
	VerdictWouldAllow Verdict = "would-allow" // a staged policy's, not enforced
	VerdictWouldDeny  Verdict = "would-deny"  // a staged policy's, not enforced
)

// IDLength is the length of an Audit ID: 48 bits of a hash, short enough
// for a kernel log prefix ("np:<id>:" is 16 bytes of the 64 NFLOG allows).
const IDLength = 12

// LogPrefix is the kernel log prefix of the audit: "np:<id>:".
func (a *Audit) LogPrefix() string { return "np:" + a.ID + ":" }

// AuditID returns the audit ID of a log prefix written by LogPrefix.
func AuditID(prefix string) (string, bool) {
	rest, found := strings.CutPrefix(prefix, "np:")
	id, closed := strings.CutSuffix(rest, ":")
	if !found || !closed || len(id) != IDLength {
		return "", false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return id, true
}

// newAudit returns a with its ID: the name of what it logs (auditKey),
// which no other audit holds (names.go): audits of one ID share a log
// chain, and with it the chain's verdict.
func newAudit(names *namer, a Audit) *Audit {
	a.ID = names.name("", auditKey(&a))
	return &a
}

// auditKey is everything an audit logs.
func auditKey(a *Audit) string {
	return fmt.Sprint(a.Verdict, a.Direction, a.Tier, a.Policy, a.Rule, a.IsolatedBy)
}

// keepAudits keeps the IDs of t's audits, from the last pass, in this one.
func keepAudits(names *namer, t *Table) {
	for _, r := range t.Rules {
		if r.Audit != nil {
			names.name("", auditKey(r.Audit))
		}
	}
	if t.DefaultAudit != nil {
		names.name("", auditKey(t.DefaultAudit))
	}
}

// ruleAudit is the audit of an allow or deny rule; nil for Pass.
func ruleAudit(names *namer, dir policy.Direction, r Rule) *Audit {
	var v Verdict
	switch r.Action {
	case Accept:
		v = VerdictAllow
	case Drop:
		v = VerdictDeny
	default:
		return nil
	}
	ref := r.From.Policy
	return newAudit(names, Audit{Verdict: v, Direction: dir.String(), Tier: r.From.Tier, Policy: &ref, Rule: r.From.Rule})
}

// isolationAudit is the audit of the implicit deny of NetworkPolicy
// isolation: it names the isolating policies.
func isolationAudit(names *namer, dir policy.Direction, by []policy.Ref) *Audit {
	return newAudit(names, Audit{Verdict: VerdictDeny, Direction: dir.String(), Tier: policy.TierNetworkPolicy.String(), IsolatedBy: by})
}

// isolationAudited reports whether one of the isolating policies asks for
// its denies to be logged.
func (c *nodeCompile) isolationAudited(by []policy.Ref) bool {
	if c.auditedNP == nil {
		c.auditedNP = map[policy.Ref]bool{}
		for _, p := range c.e.Policies().NetworkPolicies {
			if p.Audit.Logs(policy.Deny) {
				c.auditedNP[p.Ref] = true
			}
		}
	}
	for _, r := range by {
		if c.auditedNP[r] {
			return true
		}
	}
	return false
}

// auditDenies marks every deny of t for logging, whatever the policies'
// annotations say: deny rules of every tier and NetworkPolicy isolation
// (Compiler.AuditDenies, the agent's --audit-denies).
func auditDenies(names *namer, t *Table) {
	for i, r := range t.Rules {
		if r.Action == Drop && r.Audit == nil {
			t.Rules[i].Audit = ruleAudit(names, t.Dir, r)
		}
	}
	if t.Default == Drop && t.DefaultAudit == nil {
		t.DefaultAudit = isolationAudit(names, t.Dir, t.IsolatedBy)
	}
}

// AddStaged adds to ir, which e compiled, the log-only tables of the staged
// policies: per pod and direction, the tiers as they would be with the
// staged policies enforced, where a staged deny logs would-deny (and a
// staged allow would-allow, when its policy's audit annotation asks for
// allows) and every path returns. Tables in which no staged policy takes
// part are left out: they would log nothing. Nothing is added when no
// policy is staged. The names of ir's sets and audits are kept: a staged
// table's set or audit of another key never takes one (names.go).
func AddStaged(ir *IR, e *engine.Engine) {
	if e.Staged() == nil {
		return
	}
	names := newNamer()
	for _, s := range ir.Sets {
		names.keep(addrSetPrefix(s.Hosts), s.Key, s.Name)
	}
	for _, s := range ir.EndpointSets {
		names.keep("e-", s.Key, s.Name)
	}
	for _, s := range ir.DomainSets {
		names.keep(DomainSetPrefix, s.Key, s.Name)
	}
	for _, a := range Audits(ir) {
		names.keep("", auditKey(a), a.ID)
	}
	(&Compiler{names: names}).addStaged(ir, e)
}

// AddStaged is the package's AddStaged for an IR that k compiled last: its
// names are in k's namer, and the staged tables keep theirs from pass to
// pass.
func (k *Compiler) AddStaged(ir *IR, e *engine.Engine) {
	if e.Staged() == nil {
		return
	}
	if k.names == nil {
		k.names = newNamer()
	}
	(&Compiler{names: k.names, MaxPolicyTerms: k.MaxPolicyTerms}).addStaged(ir, e)
}

// addStaged adds the staged tables, compiled with k (its namer, no cache).
func (k *Compiler) addStaged(ir *IR, e *engine.Engine) {
	se := e.Staged()
	staged := map[policy.Ref]*policy.Policy{}
	for _, p := range se.Policies().Policies() {
		if p.Staged {
			staged[p.Ref] = p
		}
	}
	sir := k.node(se, ir.Node)
	renamed := map[string]string{} // table of the staged engine -> its log-only table
	added := map[string]bool{}
	for _, t := range sir.Tables {
		if !stagedTable(k.names, t, staged) {
			continue
		}
		was := t.Name
		t.LogOnly = true
		t.Name = tableName(k.names, t) // named again: its audits changed
		renamed[was] = t.Name
		if !added[t.Name] { // tables that differed only in audits are one now
			added[t.Name] = true
			ir.Tables = append(ir.Tables, t)
		}
	}
	byPod := map[string]*LocalPod{}
	for i := range ir.Pods {
		byPod[ir.Pods[i].Pod] = &ir.Pods[i]
	}
	for _, sp := range sir.Pods {
		lp := byPod[sp.Pod]
		if lp == nil {
			continue // cannot happen: both engines see the same pods
		}
		lp.StagedIngress, lp.StagedEgress = renamed[sp.Ingress], renamed[sp.Egress]
	}
	// Sets are named after their selection, so a name means the same
	// members in both IRs.
	ir.Sets = appendMissing(ir.Sets, sir.Sets, func(s *AddrSet) string { return s.Name })
	ir.EndpointSets = appendMissing(ir.EndpointSets, sir.EndpointSets, func(s *EndpointSet) string { return s.Name })
}

// appendMissing appends to have the items of more whose name it lacks.
func appendMissing[T any](have, more []T, name func(T) string) []T {
	names := make(map[string]bool, len(have))
	for _, x := range have {
		names[name(x)] = true
	}
	for _, x := range more {
		if !names[name(x)] {
			have = append(have, x)
		}
	}
	return have
}

// stagedTable rewrites the audits of a table of the staged engine for
// logging only, and reports whether a staged policy takes part in it.
func stagedTable(names *namer, t *Table, staged map[policy.Ref]*policy.Policy) bool {
	part := false
	for i, r := range t.Rules {
		t.Rules[i].Audit = nil
		p := staged[r.From.Policy]
		if p == nil {
			continue
		}
		part = true
		switch {
		case r.Action == Drop:
			t.Rules[i].Audit = wouldAudit(names, ruleAudit(names, t.Dir, r))
		case r.Action == Accept && p.Audit.Logs(policy.Allow):
			t.Rules[i].Audit = wouldAudit(names, ruleAudit(names, t.Dir, r))
		}
	}
	t.DefaultAudit = nil
	for _, ref := range t.IsolatedBy {
		if staged[ref] != nil {
			part = true
			t.DefaultAudit = wouldAudit(names, isolationAudit(names, t.Dir, t.IsolatedBy))
			break
		}
	}
	return part
}

func wouldAudit(names *namer, a *Audit) *Audit {
	a.Verdict = Verdict("would-" + string(a.Verdict))
	return newAudit(names, *a)
}

// Audits returns every audit of ir by ID: what the agent needs to read the
// kernel's log.
func Audits(ir *IR) map[string]*Audit {
	out := map[string]*Audit{}
	for _, t := range ir.Tables {
		for _, r := range t.Rules {
			if r.Audit != nil {
				out[r.Audit.ID] = r.Audit
			}
		}
		if t.DefaultAudit != nil {
			out[t.DefaultAudit.ID] = t.DefaultAudit
		}
	}
	return out
}

// logText is what the IR text dump adds to an audited rule.
func logText(a *Audit) string {
	if a == nil {
		return ""
	}
	return " [log " + string(a.Verdict) + " " + a.ID + "]"
}
