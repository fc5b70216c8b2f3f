package convert

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
)

// Prove checks, policy by policy, that each ClusterNetworkPolicy decides
// as the object it replaces: both are read back through normalisation
// (converted is what the decoder made of the written policies, in r's
// order) and must come out the same rule for rule: tier, subject, every
// rule's action, peers and ports, its name, the audit and staged
// annotations. Only the priority of a BaselineAdminNetworkPolicy moves,
// and r.Problems has checked that its place does not. Equal models decide
// alike for every pod and address, today's and tomorrow's, so this proof
// holds at any size, where comparing the engines (package diff) costs
// pairs of behaviour classes: 49 s at 10k pods, out of reach at 100k.
// It returns one problem per policy that differs, naming the first
// difference.
func Prove(r Result, converted []source.Object) diag.List {
	var problems diag.List
	if len(converted) != len(r.Replaced) {
		problems = append(problems, diag.Diagnostic{Severity: diag.Error,
			Message: fmt.Sprintf("%d ClusterNetworkPolicies read back for %d policies converted", len(converted), len(r.Replaced))})
		return problems
	}
	for i, o := range r.Replaced {
		before, after := model(o), model(converted[i])
		if before == nil || after == nil {
			o.Reporter(&problems).Errorf("", "netpol could not read it, or its conversion, without errors: nothing to prove")
			continue
		}
		if o.Kind == policy.KindBaselineAdminPolicy {
			before.Priority = after.Priority // its place is checkPlaces'
		}
		b, a := canonical(before), canonical(after)
		if b != a {
			line := 0
			bl, al := strings.Split(b, "\n"), strings.Split(a, "\n")
			for line < len(bl) && line < len(al) && bl[line] == al[line] {
				line++
			}
			at := func(ls []string) string {
				if line < len(ls) {
					return strings.TrimSpace(ls[line])
				}
				return "(nothing)"
			}
			o.Reporter(&problems).Errorf("", "its ClusterNetworkPolicy reads otherwise: %s, where it has %s", at(al), at(bl))
		}
	}
	return problems
}

// model is the one policy object o normalises to, or nil when it has
// errors.
func model(o source.Object) *policy.Policy {
	set, diags := policy.Normalize([]source.Object{o})
	ps := set.Policies()
	if len(diags.Errors()) > 0 || len(ps) != 1 || ps[0].Invalid {
		return nil
	}
	return ps[0]
}

// canonical writes what a policy decides with, a line a fact, leaving out
// what names it (kind, name, origin): two policies with the same lines
// decide alike.
func canonical(p *policy.Policy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tier %v priority %d audit %d staged %v\n", p.Tier, p.Priority, p.Audit, p.Staged)
	fmt.Fprintf(&b, "subject %s\n", podSelector(p.Subject))
	for _, d := range policy.Directions {
		for _, r := range p.Rules[d] {
			fmt.Fprintf(&b, "%s rule %q: %v failClosed %v allPeers %v allPorts %v\n", r.Dir, r.Label(), r.Action, r.FailClosed, r.AllPeers, r.AllPorts)
			for _, pe := range r.Peers {
				fmt.Fprintf(&b, "  peer %d %v: %s\n", pe.Index, pe.Kind, peerFacts(pe))
			}
			for _, pm := range r.Ports {
				fmt.Fprintf(&b, "  port %s\n", pm) // a name with its protocol, or a range
			}
		}
	}
	return b.String()
}

func podSelector(s policy.PodSelector) string {
	ns := s.Namespaces
	return "namespaces " + strconv.Itoa(int(ns.Match)) + " " + strconv.Quote(ns.Selector.Text) + " " + strconv.Quote(ns.Name) +
		" " + strings.Join(ns.Keys, ",") + " pods " + strconv.Quote(s.Pods.Text)
}

func peerFacts(p policy.Peer) string {
	switch p.Kind {
	case policy.PeerPods:
		return podSelector(p.Pods)
	case policy.PeerIPBlock:
		return p.Block.String()
	case policy.PeerNodes:
		return strconv.Quote(p.Nodes.Text)
	case policy.PeerDomains:
		return policy.JoinDomains(p.Domains, ",")
	}
	return "?"
}
