// Package secgroups renders policies as OpenStack Neutron security groups,
// the way seeds/kuryr-network-policy-spec.txt maps NetworkPolicy onto them:
// one group per policy, its rules the product of peers and ports, CIDR
// exceptions split into covering CIDRs, named ports resolved, selector peers
// as remote groups. It shows that the engine's decisions serve a dataplane
// other than nftables. It imports engine, compile (for CIDR arithmetic),
// policy and state.
package secgroups

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Limits says what security groups cannot express; it is part of the help.
const Limits = `Security groups (-o security-groups) can only allow: a port with groups
accepts the union of their rules and drops the rest. So they express
NetworkPolicy and admin/baseline rules that Allow (an admin Allow joins the
union of the pod's allows), but not Deny or Pass, nor an order between rules:
input with a Deny or Pass rule is refused, naming the rules. A port with
groups gets allow-all-<direction> for each direction no policy isolates (a
pod that is only a remote group's member gets both), as Kuryr keeps the
default group on every port; with --node, the ports are the node's pods.`

// Output is the groups and which pod (Neutron port) belongs to which group.
type Output struct {
	Groups []*Group `json:"groups"`
	Ports  []Port   `json:"ports"`
}

// Group is one security group.
type Group struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Rules       []*Rule `json:"rules"`
}

// Rule is a Neutron security group rule. Exactly one of RemoteIPPrefix and
// RemoteGroup is set, or neither (any peer).
type Rule struct {
	Direction      string `json:"direction"` // ingress or egress
	Ethertype      string `json:"ethertype"` // IPv4 or IPv6
	Protocol       string `json:"protocol,omitempty"`
	PortRangeMin   int    `json:"port_range_min,omitempty"`
	PortRangeMax   int    `json:"port_range_max,omitempty"`
	RemoteIPPrefix string `json:"remote_ip_prefix,omitempty"`
	RemoteGroup    string `json:"remote_group,omitempty"`
}

// Port is a pod's Neutron port with its groups.
type Port struct {
	Pod    string   `json:"pod"`
	IPs    []string `json:"ips"`
	Groups []string `json:"security_groups"`
}

// Render maps every policy of e onto security groups, or refuses input that
// groups cannot express. With a node, the ports are those of the node's
// pods (what its agent would program), with every group they use; "" is
// the whole cluster.
func Render(e *engine.Engine, node string) (*Output, error) {
	var refused []string
	for _, p := range e.Policies().Policies() {
		for _, d := range policy.Directions {
			for _, r := range p.Rules[d] {
				if r.Action != policy.Allow {
					refused = append(refused, fmt.Sprintf("%s %s (%s)", p.Ref, r.Label(), r.Action))
				}
			}
		}
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("security groups can only allow; these rules deny or pass:\n  %s", strings.Join(refused, "\n  "))
	}
	r := &renderer{groups: map[string]*Group{}, members: map[string]map[string]bool{}}
	for _, pod := range e.Cluster().Pods {
		if pod.HostNetwork || len(pod.IPs) == 0 {
			continue
		}
		r.pod(e, pod)
	}
	out := &Output{}
	used := map[string]bool{}
	for _, pod := range e.Cluster().Pods {
		groups := r.members[pod.Key()]
		if len(groups) == 0 || node != "" && pod.Node != node {
			continue
		}
		// A port with groups allows only what they allow: a direction
		// that no policy isolates keeps allowing everything, as the
		// default group that Kuryr keeps on every port does.
		for _, d := range policy.Directions {
			if !isolated(e.Program(pod, d)) {
				r.join(pod.Key(), r.allowAll(d))
			}
		}
		for g := range groups {
			used[g] = true
		}
		port := Port{Pod: pod.Key(), Groups: sortedKeys(groups)}
		for _, ip := range pod.IPs {
			port.IPs = append(port.IPs, ip.String())
		}
		out.Ports = append(out.Ports, port)
	}
	for name := range used {
		for _, rule := range r.groups[name].Rules {
			if rule.RemoteGroup != "" {
				used[rule.RemoteGroup] = true // a rule names it: it must exist
			}
		}
	}
	for _, name := range sortedKeys(r.groups) {
		if used[name] {
			out.Groups = append(out.Groups, r.groups[name])
		}
	}
	return out, nil
}

// allowAll returns the group that allows everything in direction d.
func (r *renderer) allowAll(d policy.Direction) string {
	name := "allow-all-" + d.String()
	if r.groups[name] == nil {
		g := &Group{Name: name, Description: "the pod is not isolated for " + d.String()}
		for _, eth := range []string{"IPv4", "IPv6"} {
			g.Rules = append(g.Rules, &Rule{Direction: d.String(), Ethertype: eth})
		}
		r.groups[name] = g
	}
	return name
}

type renderer struct {
	groups  map[string]*Group
	members map[string]map[string]bool // pod -> groups
}

func (r *renderer) join(pod, group string) {
	if r.members[pod] == nil {
		r.members[pod] = map[string]bool{}
	}
	r.members[pod][group] = true
}

// pod gives a pod the groups of the policies that decide its traffic. A
// policy's group is shared by its pods unless their named ports resolve
// differently, which splits it.
func (r *renderer) pod(e *engine.Engine, pod *state.Pod) {
	var progs [2]engine.Program
	some := false
	for _, d := range policy.Directions {
		progs[d] = e.Program(pod, d)
		some = some || isolated(progs[d])
	}
	if !some {
		return // no group: Neutron's port keeps allowing everything
	}
	for _, d := range policy.Directions {
		if !isolated(progs[d]) {
			continue // allow-all-<d>, given in Render to every port with groups
		}
		byPolicy := map[*policy.Policy][]engine.AppliedRule{}
		var order []*policy.Policy
		for _, tp := range progs[d].Tiers { // the walk ends at the isolating tier: only allows (Render refused the rest)
			for _, ar := range tp.Rules {
				if byPolicy[ar.Policy] == nil {
					order = append(order, ar.Policy)
				}
				byPolicy[ar.Policy] = append(byPolicy[ar.Policy], ar)
			}
		}
		for _, p := range order {
			var rules []*Rule
			for _, ar := range byPolicy[p] {
				rules = append(rules, r.rules(pod, d, ar)...)
			}
			name := groupName(p, d, rules)
			if r.groups[name] == nil {
				r.groups[name] = &Group{Name: name, Description: fmt.Sprintf("%s, %s rules", p.Ref, d), Rules: rules}
			}
			r.join(pod.Key(), name)
		}
	}
}

// isolated reports whether a NetworkPolicy (or the namespace) isolates the
// pod in prog's direction: what no rule allows is then denied.
func isolated(prog engine.Program) bool {
	rest, _ := prog.Rest()
	return rest == engine.Deny
}

// rules is the product of a rule's peers and ports, in one direction.
func (r *renderer) rules(subject *state.Pod, dir policy.Direction, ar engine.AppliedRule) []*Rule {
	type remote struct {
		prefix, group string
		pods          []*state.Pod // for named ports resolved at the peer
	}
	var remotes []remote
	if ar.Rule.AllPeers {
		remotes = append(remotes, remote{})
	}
	for _, peer := range ar.Peers {
		switch peer.Kind {
		case policy.PeerPods:
			group := "peer-" + shortName(peer.Key)
			if r.groups[group] == nil {
				r.groups[group] = &Group{Name: group, Description: "remote group: " + peer.Key}
			}
			members := peer.Pods()
			for _, p := range members {
				r.join(p.Key(), group)
			}
			remotes = append(remotes, remote{group: group, pods: members})
		case policy.PeerIPBlock:
			for _, p := range compile.Subtract(peer.Block.CIDR, peer.Block.Except) {
				remotes = append(remotes, remote{prefix: p.String()})
			}
		case policy.PeerNodes:
			for _, n := range peer.Nodes() {
				for _, ip := range n.IPs {
					remotes = append(remotes, remote{prefix: netip.PrefixFrom(ip, ip.BitLen()).String()})
				}
			}
		}
	}
	var out []*Rule
	for _, rem := range remotes {
		if ar.Rule.AllPorts {
			for _, eth := range ethertypes(rem.prefix) {
				out = append(out, &Rule{Direction: dir.String(), Ethertype: eth, RemoteIPPrefix: rem.prefix, RemoteGroup: rem.group})
			}
			continue
		}
		for _, pm := range ar.Rule.Ports {
			for _, rg := range resolve(pm, subject, dir, rem.pods) {
				for _, eth := range ethertypes(rem.prefix) {
					out = append(out, &Rule{Direction: dir.String(), Ethertype: eth, Protocol: strings.ToLower(rg.Proto.String()),
						PortRangeMin: int(rg.First), PortRangeMax: int(rg.Last), RemoteIPPrefix: rem.prefix, RemoteGroup: rem.group})
				}
			}
		}
	}
	return out
}

// resolve turns a port clause into ranges: a named port against the subject
// (ingress: it is the destination) or against every destination pod of the
// peer (egress; numbers may differ per pod, so the rule is slightly wider).
func resolve(pm policy.PortMatch, subject *state.Pod, dir policy.Direction, peers []*state.Pod) []l4.Range {
	if pm.Named == "" {
		return []l4.Range{pm.Range}
	}
	dsts := []*state.Pod{subject}
	if dir == policy.Egress {
		dsts = peers
	}
	seen := map[l4.Port]bool{}
	var out []l4.Range
	for _, p := range dsts {
		if port, ok := p.NamedPort(pm.Named, pm.NamedProto); ok && !seen[port] {
			seen[port] = true
			out = append(out, l4.Range{Proto: port.Proto, First: port.Num, Last: port.Num})
		}
	}
	return out
}

func ethertypes(prefix string) []string {
	if prefix == "" {
		return []string{"IPv4", "IPv6"}
	}
	if strings.Contains(prefix, ":") {
		return []string{"IPv6"}
	}
	return []string{"IPv4"}
}

// groupName is the policy's name, with a suffix when named ports made its
// rules differ between pods.
func groupName(p *policy.Policy, dir policy.Direction, rules []*Rule) string {
	base := strings.ToLower(p.Kind) + "-"
	if p.Namespace != "" {
		base += p.Namespace + "-"
	}
	base += p.Name + "-" + dir.String()
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "%+v\n", *r)
	}
	return base + "-" + shortName(b.String())[:6]
}

func shortName(s string) string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return fmt.Sprintf("%012x", h&0xffffffffffff)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
