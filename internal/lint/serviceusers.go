package lint

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// unreachableServices reports Services that nobody who uses them can reach.
// Who uses a Service, the input says through egress NetworkPolicies: a rule
// whose pod peers select one of its backends, on one of its target ports,
// was written so that its pods can connect to it. When no backend admits
// any of those pods on any target port (their ingress, or an admin rule,
// denies it), the egress rules allow nothing that arrives and the Service
// is down for its users. A Service no egress rule points at is not
// judged: nothing says who should reach it.
func (l *linter) unreachableServices() {
	c := l.e.Cluster()
	backendOf := map[*state.Pod][]*state.Service{}
	for _, s := range c.Services {
		for _, sp := range s.Ports {
			for _, b := range sp.Backends {
				if b.Pod != nil && !slices.Contains(backendOf[b.Pod], s) {
					backendOf[b.Pod] = append(backendOf[b.Pod], s)
				}
			}
		}
	}
	if len(backendOf) == 0 {
		return
	}
	type usage struct {
		users []*state.Pod
		seen  map[*state.Pod]bool
		by    *policy.Policy // the first egress policy that points at it
	}
	used := map[*state.Service]*usage{}
	var order []*state.Service
	for _, p := range l.set.NetworkPolicies {
		members := l.e.Members(p)
		if len(members) == 0 {
			continue
		}
		for _, r := range p.Rules[policy.Egress] {
			if r.AllPeers || !slices.ContainsFunc(r.Peers, func(pe policy.Peer) bool { return pe.Kind == policy.PeerPods }) {
				continue // not a statement about particular pods
			}
			for _, dst := range l.destinations(r, members) {
				for _, s := range backendOf[dst] {
					if !allowsATarget(r, s, dst) {
						continue
					}
					u := used[s]
					if u == nil {
						u = &usage{seen: map[*state.Pod]bool{}, by: p}
						used[s] = u
						order = append(order, s)
					}
					for _, m := range members {
						if !u.seen[m] && !slices.Contains(backendOf[m], s) { // a backend is no user of its own Service
							u.seen[m] = true
							u.users = append(u.users, m)
						}
					}
				}
			}
		}
	}
	for _, s := range order {
		u := used[s]
		if len(u.users) == 0 {
			continue
		}
		m := l.e.ServiceMatrix(u.users, []*state.Service{s})
		reached := false
		for si := range u.users {
			for ci := range m.Columns {
				if r := m.Reach(si, ci); r == engine.ReachAll || r == engine.ReachSome {
					reached = true
				}
			}
		}
		if reached {
			continue
		}
		// One denied flow, with the side that denies it, as the example.
		example := ""
		if i := slices.IndexFunc(s.Ports, func(sp state.ServicePort) bool { return len(sp.Backends) > 0 }); i >= 0 {
			v := l.e.DecideService(l.e.PodEndpoint(u.users[0], netip.Addr{}), s, &s.Ports[i], netip.Addr{})
			if len(v.Backends) > 0 { // none when the user has no address of the backends' family
				b := v.Backends[0]
				side := "ingress of " + b.Flow.Dst.String()
				if !b.Verdict.Egress.Allowed {
					side = "egress of " + b.Flow.Src.String()
				}
				example = fmt.Sprintf(" (e.g. %s -> %s %s: denied by the %s)", b.Flow.Src, b.Flow.Dst, b.Flow.Port, side)
			}
		}
		l.add(Finding{Severity: Warning, Code: CodeServiceUnreachable, Object: serviceRef(s), Origin: s.Origin, Field: "spec.selector",
			Message: fmt.Sprintf("no pod whose egress policy points at this Service's backends (%s) can reach any of them on a target port%s: for its users the Service is down",
				podList(u.users), example),
			Hint:    "let the backends admit those pods on the target ports (an ingress rule), or drop the egress rules that point at them",
			Related: []Place{{Object: u.by.Ref, Field: "spec.egress"}}})
	}
}

// allowsATarget reports whether r allows dst's port behind one of s's ports.
func allowsATarget(r *policy.Rule, s *state.Service, dst *state.Pod) bool {
	for _, sp := range s.Ports {
		for _, b := range sp.Backends {
			if b.Pod != dst {
				continue
			}
			if r.AllPorts || slices.ContainsFunc(r.Ports, func(pm policy.PortMatch) bool { return portAllows(pm, dst, b.Port) }) {
				return true
			}
		}
	}
	return false
}
