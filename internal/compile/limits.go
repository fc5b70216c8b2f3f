package compile

import (
	"fmt"

	"github.com/netpol/netpol/internal/policy"
)

// A tenant may write NetworkPolicies in its namespace, and the cost of one
// on a node grows with its size: sets and rules in linear measure (the
// peers of a rule share one set, or a few rules over their own sets while
// peers x ports is small; an ipBlock's exceptions are ranges), but
// a policy the API server stores can still hold tens of thousands of
// peers, exceptions or ports, on every node where it selects a pod. Past
// a limit, compile refuses the policy rather than have the node stall
// programming it: a refused NetworkPolicy keeps isolating the pods it
// selects and allows nothing (fail closed), every other policy is
// programmed as usual, and IR.Refused says which and why so that the agent
// reports it. Admin policies are an administrator's, and dropping one of
// their Deny rules would open traffic, so they are never refused here.

// DefaultMaxPolicyTerms is the most terms a NetworkPolicy may have for a
// node to program it (Compiler.MaxPolicyTerms): peers, ipBlock exceptions
// and ports, over all its rules. The 56 KB policy of 2,000 exceptions
// and the 59 KB one of 1,000 peers x 1,000 ports are each about 2,000.
const DefaultMaxPolicyTerms = 10000

// Refusal is a NetworkPolicy that compile left out of the rules it
// programs because it is too large: it isolates its pods and allows
// nothing. It is an error that names the policy.
type Refusal struct {
	Policy policy.Ref `json:"policy"`
	Terms  int        `json:"terms"`
	Limit  int        `json:"limit"`
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s has %d peers, ipBlock exceptions and ports, more than the %d a node programs: refused; it isolates the pods it selects and allows nothing",
		r.Policy, r.Terms, r.Limit)
}

// policyTerms counts the terms of p (see DefaultMaxPolicyTerms).
func policyTerms(p *policy.Policy) int {
	n := 0
	for _, rules := range p.Rules {
		for _, r := range rules {
			n += len(r.Ports)
			for _, peer := range r.Peers {
				n += 1 + len(peer.Block.Except) + len(peer.Domains)
			}
		}
	}
	return n
}

// refusal returns the refusal of p on this node, nil when it is
// programmed.
func (c *nodeCompile) refusal(p *policy.Policy) *Refusal {
	if p.Tier != policy.TierNetworkPolicy {
		return nil
	}
	r, ok := c.refusals[p]
	if !ok {
		if terms := policyTerms(p); terms > c.maxTerms {
			r = &Refusal{Policy: p.Ref, Terms: terms, Limit: c.maxTerms}
		}
		c.refusals[p] = r
	}
	return r
}
