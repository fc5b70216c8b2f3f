package compile

import (
	"net/netip"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
)

// The IR decides connections the way a renderer's rules do, and Decide
// says how, without a kernel: a differential test holds it against the
// engine's Decide on random clusters (eval_test.go), so that what is
// compiled for each node is known to decide what the engine decides on
// every developer machine, not only in the root-only lab.

// Side is the IR's decision in one direction.
type Side struct {
	// Applies: the address is a local pod with a table in this direction
	// (otherwise nothing restricts it here).
	Applies bool
	Allowed bool
	// By is the rule that decided, nil for the table's default.
	By *Rule
}

// Index is an IR's tables and sets by name, as renderers and the
// evaluator look up what a pod or a rule names.
type Index struct {
	Tables    map[string]*Table
	Sets      map[string]*AddrSet
	Endpoints map[string]*EndpointSet
}

// Index indexes the IR's tables and sets by name.
func (ir *IR) Index() Index {
	x := Index{Tables: make(map[string]*Table, len(ir.Tables)), Sets: make(map[string]*AddrSet, len(ir.Sets)),
		Endpoints: make(map[string]*EndpointSet, len(ir.EndpointSets))}
	for _, t := range ir.Tables {
		x.Tables[t.Name] = t
	}
	for _, s := range ir.Sets {
		x.Sets[s.Name] = s
	}
	for _, s := range ir.EndpointSets {
		x.Endpoints[s.Name] = s
	}
	return x
}

// Evaluator decides connections with one IR's tables (IR.Evaluator).
type Evaluator struct {
	Index
	egress  map[netip.Addr]string // a local pod's address -> its table
	ingress map[netip.Addr]string
	// Learned holds, by DomainSet name, the addresses a node has learned
	// for it (what its kernel's domain set holds); without it a domain
	// rule matches nothing, as in a kernel that has learned nothing yet.
	Learned map[string]map[netip.Addr]bool
}

// Evaluator indexes the IR's tables and sets once, for many Decide calls.
func (ir *IR) Evaluator() *Evaluator {
	ev := &Evaluator{Index: ir.Index(), egress: map[netip.Addr]string{}, ingress: map[netip.Addr]string{}}
	for _, p := range ir.Pods {
		for _, ip := range p.IPs {
			if p.Egress != "" {
				ev.egress[ip] = p.Egress
			}
			if p.Ingress != "" {
				ev.ingress[ip] = p.Ingress
			}
		}
	}
	return ev
}

// Decide evaluates the connection src -> dst on port with the IR's
// tables: egress when src is one of the node's pods, ingress when dst is.
// Staged (log-only) tables decide nothing and are not walked.
func (ev *Evaluator) Decide(src, dst netip.Addr, port l4.Port) (egress, ingress Side) {
	egress, ingress = Side{Allowed: true}, Side{Allowed: true}
	if t, ok := ev.egress[src]; ok {
		egress = ev.walk(ev.Tables[t], dst, port)
	}
	if t, ok := ev.ingress[dst]; ok {
		ingress = ev.walk(ev.Tables[t], src, port)
	}
	return egress, ingress
}

// walk runs a table's rules in order for a connection with peer address
// peer: the first match decides; a Pass leaves the admin tier for the
// rules after it; an EndTier leaves the baseline tier, which allows.
func (ev *Evaluator) walk(t *Table, peer netip.Addr, port l4.Port) Side {
	s := Side{Applies: true}
	if t == nil || t.LogOnly {
		return Side{Allowed: true}
	}
	for i := 0; i < len(t.Rules); i++ {
		r := &t.Rules[i]
		if !ev.matches(r, peer, port) {
			continue
		}
		switch r.Action {
		case Accept, EndTier:
			s.Allowed, s.By = true, r
			return s
		case Drop:
			s.By = r
			return s
		case Pass:
			for i+1 < len(t.Rules) && t.Rules[i+1].Tier == policy.TierAdmin {
				i++
			}
		}
	}
	s.Allowed = t.Default == Accept
	return s
}

// matches reports whether the rule's peer and ports match. A domain set
// holds what the node learned (Learned), nothing at compile time.
func (ev *Evaluator) matches(r *Rule, peer netip.Addr, port l4.Port) bool {
	if r.Domains != "" && !ev.Learned[r.Domains][peer] {
		return false
	}
	if r.Endpoints != "" {
		for _, e := range ev.Endpoints[r.Endpoints].Elements {
			if e.IP == peer && e.Port == port {
				return true
			}
		}
		return false
	}
	if r.Peer != "" {
		in := false
		for _, p := range ev.Sets[r.Peer].Prefixes {
			if p.Contains(peer) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	if len(r.Ports) == 0 {
		return true
	}
	for _, pr := range r.Ports {
		if pr.Contains(port) {
			return true
		}
	}
	return false
}
