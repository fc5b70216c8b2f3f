package lint

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// The mistakes people make with Services all come from one fact: policy
// applies after the translation, to the backend pod's address and target
// port, never to the Service's address or port.

// servicePorts reports NetworkPolicy ports that name a Service's port where
// the Service translates to another target port that the rule does not
// allow: the rule was written for the port clients dial, and matches
// nothing they send.
func (l *linter) servicePorts() {
	index := newServicePortIndex(l.e.Cluster().Services)
	if len(index) == 0 {
		return
	}
	for _, p := range l.set.NetworkPolicies {
		members := l.e.Members(p)
		if len(members) == 0 {
			continue
		}
		for _, rules := range p.Rules {
			for _, r := range rules {
				if r.AllPorts {
					continue
				}
				// The rule's destinations, when a Service port first asks.
				var dsts map[*state.Pod]bool
				var dstList []*state.Pod
				for j, pm := range r.Ports {
					if pm.Named != "" {
						continue
					}
					for _, at := range index.in(pm.Range) {
						sp := at.svc.Ports[at.port]
						if dsts == nil {
							dstList = l.destinations(r, members)
							dsts = make(map[*state.Pod]bool, len(dstList))
							for _, d := range dstList {
								dsts[d] = true
							}
						}
						missed, targets := untranslated(r, sp, dsts)
						if len(missed) == 0 {
							continue
						}
						l.add(Finding{Severity: Warning, Code: CodeServicePort, Object: p.Ref, Origin: p.Origin, Field: portField(r, j),
							Message: fmt.Sprintf("allows %s, the port of Service %s, but policy applies after the Service translation: its backends (%s) listen on %s, which this rule does not allow",
								sp.Port, at.svc.Key(), podList(missed), strings.Join(targets, ", ")),
							Hint:    "allow the target port instead of the Service port: " + targetHint(sp, targets),
							Related: []Place{{Object: serviceRef(at.svc), Field: "spec.ports"}}})
					}
				}
			}
		}
	}
}

// servicePortIndex is every port of every Service, by protocol and number,
// so that a policy's port range finds the Service ports in it without a
// look at the others.
type servicePortIndex []servicePortAt

type servicePortAt struct {
	port   int // index in svc.Ports
	svc    *state.Service
	order  int // the Service's index in the cluster's list
	number l4.Port
}

func newServicePortIndex(svcs []*state.Service) servicePortIndex {
	var x servicePortIndex
	for i, s := range svcs {
		for j, sp := range s.Ports {
			x = append(x, servicePortAt{port: j, svc: s, order: i, number: sp.Port})
		}
	}
	slices.SortFunc(x, func(a, b servicePortAt) int {
		return cmp.Or(cmp.Compare(a.number.Proto, b.number.Proto), cmp.Compare(a.number.Num, b.number.Num))
	})
	return x
}

// in returns the Service ports in r, in the order of the Services and of
// their ports (findings come out in that order).
func (x servicePortIndex) in(r l4.Range) []servicePortAt {
	key := func(p l4.Port) int { return int(p.Proto)<<16 | int(p.Num) }
	lo, _ := slices.BinarySearchFunc(x, r.First, func(a servicePortAt, first uint16) int {
		return cmp.Compare(key(a.number), key(l4.Port{Proto: r.Proto, Num: first}))
	})
	hi := lo
	for hi < len(x) && r.Contains(x[hi].number) {
		hi++
	}
	if hi == lo {
		return nil
	}
	out := slices.Clone(x[lo:hi])
	slices.SortFunc(out, func(a, b servicePortAt) int {
		return cmp.Or(cmp.Compare(a.order, b.order), cmp.Compare(a.port, b.port))
	})
	return out
}

// untranslated are the pods among dsts that back sp on a target port other
// than sp's own, which no port of r allows, with those target ports.
func untranslated(r *policy.Rule, sp state.ServicePort, dsts map[*state.Pod]bool) (pods []*state.Pod, targets []string) {
	seen := map[*state.Pod]bool{}
	for _, b := range sp.Backends {
		if b.Pod == nil || b.Port == sp.Port || seen[b.Pod] || !dsts[b.Pod] {
			continue
		}
		if slices.ContainsFunc(r.Ports, func(pm policy.PortMatch) bool { return portAllows(pm, b.Pod, b.Port) }) {
			continue
		}
		seen[b.Pod] = true
		pods = append(pods, b.Pod)
		if t := b.Port.String(); !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	return pods, targets
}

// portAllows says whether pm allows port on pod (a named port resolved
// against the pod, as for the destination of a flow).
func portAllows(pm policy.PortMatch, pod *state.Pod, port l4.Port) bool {
	if pm.Named == "" {
		return pm.Range.Contains(port)
	}
	got, ok := pod.NamedPort(pm.Named, pm.NamedProto)
	return ok && got == port
}

func targetHint(sp state.ServicePort, targets []string) string {
	var nums []string
	for _, t := range targets {
		n, _, _ := strings.Cut(t, "/")
		nums = append(nums, "port: "+n)
	}
	hint := strings.Join(nums, " and ")
	if sp.Target.Name != "" {
		hint += " (or its name, port: " + sp.Target.Name + ")"
	}
	return hint
}

// serviceRef files a finding under a Service.
func serviceRef(s *state.Service) policy.Ref {
	return policy.Ref{Kind: "Service", Namespace: s.Namespace.Name, Name: s.Name}
}

// serviceTargets reports Service ports whose named targetPort no pod the
// selector picks declares: the endpoint controller leaves every such pod
// out, so the port leads nowhere.
func (l *linter) serviceTargets() {
	c := l.e.Cluster()
	for _, s := range c.Services {
		if s.FromSlices || s.Selector == nil {
			continue
		}
		var selected []*state.Pod
		for _, p := range c.PodsIn(s.Namespace) {
			if s.Selector.Matches(p.Labels) && !p.NotReady {
				selected = append(selected, p)
			}
		}
		if len(selected) == 0 {
			continue // selects nothing: no pod to declare the name
		}
		for i, sp := range s.Ports {
			if sp.Target.Name == "" || len(sp.Backends) > 0 {
				continue
			}
			l.add(Finding{Severity: Warning, Code: CodeServiceTarget, Object: serviceRef(s), Origin: s.Origin,
				Field:   fmt.Sprintf("spec.ports[%d].targetPort", i),
				Message: fmt.Sprintf("no pod the selector picks (%s) declares a %s container port named %s: the port has no backends", podList(selected), sp.Port.Proto, sp.Target.Name),
				Hint:    "they declare: " + declaredNames(selected) + "; use one of those names or a port number"})
		}
	}
}

// clusterIPBlocks reports egress ipBlock (and networks) peers that cover a
// Service's cluster IP: traffic leaves the pod for the cluster IP, but
// policy sees the backend's pod address, so the peer never matches it.
func (l *linter) clusterIPBlocks() {
	svcs := l.e.Cluster().Services
	for _, p := range l.set.Policies() {
		for _, r := range p.Rules[policy.Egress] {
			for _, peer := range r.Peers {
				if peer.Kind != policy.PeerIPBlock {
					continue
				}
				var covered []string
				var ips []netip.Addr
				for _, s := range svcs {
					for _, ip := range s.ClusterIPs {
						if peer.Block.Contains(ip) {
							covered = append(covered, s.Key())
							ips = append(ips, ip)
							break
						}
					}
				}
				if len(covered) == 0 {
					continue
				}
				field := peerField(r, peer.Index)
				if p.Kind == policy.KindNetworkPolicy {
					field += ".ipBlock"
				} else {
					field += ".networks"
				}
				more := ""
				if len(covered) > 2 {
					more = fmt.Sprintf(" and %d more", len(covered)-2)
					covered = covered[:2]
				}
				l.add(Finding{Severity: Warning, Code: CodeClusterIPBlock, Object: p.Ref, Origin: p.Origin, Field: field,
					Message: fmt.Sprintf("%s covers the cluster IP %s of Service %s%s, but policy applies after the Service translation, to the backends' pod addresses: this peer never matches traffic to the Service",
						peer.Block, ips[0], strings.Join(covered, ", "), more),
					Hint: "select the backends instead, with a podSelector and namespaceSelector that match the Service's pods"})
			}
		}
	}
}
