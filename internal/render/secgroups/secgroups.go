// Package secgroups renders one node's IR (package compile) as OpenStack
// Neutron security groups, the way seeds/kuryr-network-policy-spec.txt maps
// policies onto them: one group per policy and direction, its rules the
// product of peers and ports. It takes the IR that the nftables renderer
// takes (compile.Renderer), so the same decisions reach both dataplanes:
// CIDR exceptions are already subtracted, named ports already resolved.
// Where Kuryr writes a selector peer as a remote group, this renderer
// writes the addresses of its pods (remote_ip_prefix): a remote group's
// members include pods of other nodes, which one node's IR does not know.
// It imports compile, l4 and policy.
package secgroups

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/jsontext"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
)

// Limits says what security groups cannot express; it is part of the help.
const Limits = `Security groups (-o security-groups) can only allow: a port with groups
accepts the union of their rules and drops the rest. So they express
NetworkPolicy and admin/baseline rules that Allow (an admin Allow joins the
union of the pod's allows), but not Deny or Pass, nor an order between rules,
nor domainNames (their addresses are learned at run time): input with such a
rule is refused, naming it. A selector peer is written as its pods'
addresses. A pod that a policy isolates in one direction gets
allow-all-<direction> for the other, as Kuryr keeps the default group on
every port; a pod that no policy isolates gets no group. The ports are the
node's pods.`

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

// Rule is a Neutron security group rule; without RemoteIPPrefix it allows
// any peer.
type Rule struct {
	Direction      string `json:"direction"` // ingress or egress
	Ethertype      string `json:"ethertype"` // IPv4 or IPv6
	Protocol       string `json:"protocol,omitempty"`
	PortRangeMin   int    `json:"port_range_min,omitempty"`
	PortRangeMax   int    `json:"port_range_max,omitempty"`
	RemoteIPPrefix string `json:"remote_ip_prefix,omitempty"`
}

// Port is a pod's Neutron port with its groups.
type Port struct {
	Pod    string   `json:"pod"`
	IPs    []string `json:"ips"`
	Groups []string `json:"security_groups"`
}

// JSON renders an IR as security groups in JSON (compile.Renderer).
type JSON struct{}

var _ compile.Renderer = JSON{}

// Render writes the security groups of ir to w.
func (JSON) Render(w io.Writer, ir *compile.IR) error {
	out, err := Render(ir)
	if err != nil {
		return err
	}
	enc := jsontext.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// Render maps the tables of ir onto security groups, or refuses an IR
// that groups cannot express.
func Render(ir *compile.IR) (*Output, error) {
	if err := refuse(ir); err != nil {
		return nil, err
	}
	r := renderer{Index: ir.Index(), groups: map[string]*Group{}}
	out := &Output{}
	for _, p := range ir.Pods {
		dirs := map[policy.Direction]*compile.Table{policy.Ingress: r.Tables[p.Ingress], policy.Egress: r.Tables[p.Egress]}
		if !isolating(dirs[policy.Ingress]) && !isolating(dirs[policy.Egress]) {
			continue // no group: Neutron's port keeps allowing everything
		}
		var groups []string
		for _, d := range policy.Directions {
			if t := dirs[d]; isolating(t) {
				groups = append(groups, r.policyGroups(t, d)...)
			} else {
				groups = append(groups, r.allowAll(d))
			}
		}
		slices.Sort(groups)
		port := Port{Pod: p.Pod, Groups: slices.Compact(groups)}
		for _, ip := range p.IPs {
			port.IPs = append(port.IPs, ip.String())
		}
		out.Ports = append(out.Ports, port)
	}
	for _, name := range sortedKeys(r.groups) {
		out.Groups = append(out.Groups, r.groups[name])
	}
	return out, nil
}

// refuse names the rules that groups cannot express: any that does not
// allow, or that allows domainNames.
func refuse(ir *compile.IR) error {
	var refused []string
	seen := map[string]bool{}
	for _, t := range ir.Tables {
		if t.LogOnly {
			continue // staged policies: enforced nowhere
		}
		for _, r := range t.Rules {
			why := ""
			switch {
			case r.Action == compile.Drop:
				why = "Deny"
			case r.Action == compile.Pass || r.Action == compile.EndTier:
				why = "Pass"
			case r.Domains != "":
				why = "domainNames"
			}
			if line := fmt.Sprintf("%s (%s)", r.From, why); why != "" && !seen[line] {
				seen[line] = true
				refused = append(refused, line)
			}
		}
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		return fmt.Errorf("security groups can only allow addresses they know; these rules deny, pass or name domains:\n  %s", strings.Join(refused, "\n  "))
	}
	return nil
}

// isolating reports whether t denies what its rules do not allow: a
// NetworkPolicy (or the namespace) isolates its pods.
func isolating(t *compile.Table) bool { return t != nil && t.Default == compile.Drop }

type renderer struct {
	compile.Index
	groups map[string]*Group
}

// policyGroups makes the groups of the policies whose rules t holds, one a
// policy, and returns their names.
func (r *renderer) policyGroups(t *compile.Table, d policy.Direction) []string {
	byPolicy := map[policy.Ref][]*Rule{}
	var order []policy.Ref
	for _, rule := range t.Rules {
		ref := rule.From.Policy
		if _, ok := byPolicy[ref]; !ok {
			order = append(order, ref)
		}
		byPolicy[ref] = append(byPolicy[ref], r.rules(rule, d)...)
	}
	var names []string
	for _, ref := range order {
		rules := byPolicy[ref]
		name := groupName(ref, d, rules)
		if r.groups[name] == nil {
			r.groups[name] = &Group{Name: name, Description: fmt.Sprintf("%s, %s rules", ref, d), Rules: rules}
		}
		names = append(names, name)
	}
	return names
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

// rules is the product of an IR rule's peers and ports, in one direction.
func (r *renderer) rules(rule compile.Rule, d policy.Direction) []*Rule {
	var out []*Rule
	add := func(prefix netip.Prefix, ranges []l4.Range) {
		eths := []string{"IPv4", "IPv6"}
		remote := ""
		if prefix.IsValid() {
			remote, eths = prefix.String(), []string{ethertype(prefix.Addr())}
		}
		if len(ranges) == 0 {
			for _, eth := range eths {
				out = append(out, &Rule{Direction: d.String(), Ethertype: eth, RemoteIPPrefix: remote})
			}
			return
		}
		for _, rg := range ranges {
			for _, eth := range eths {
				out = append(out, &Rule{Direction: d.String(), Ethertype: eth, Protocol: strings.ToLower(rg.Proto.String()),
					PortRangeMin: int(rg.First), PortRangeMax: int(rg.Last), RemoteIPPrefix: remote})
			}
		}
	}
	switch {
	case rule.Endpoints != "": // named ports resolved per destination pod
		for _, e := range r.Endpoints[rule.Endpoints].Elements {
			add(netip.PrefixFrom(e.IP, e.IP.BitLen()), []l4.Range{{Proto: e.Port.Proto, First: e.Port.Num, Last: e.Port.Num}})
		}
	case rule.Peer != "":
		for _, p := range r.Sets[rule.Peer].Prefixes {
			add(p, rule.Ports)
		}
	default:
		add(netip.Prefix{}, rule.Ports)
	}
	return out
}

func ethertype(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// groupName is the policy's name, with a suffix for its rules: pods whose
// named ports or peers resolve differently get groups of their own.
func groupName(ref policy.Ref, dir policy.Direction, rules []*Rule) string {
	base := strings.ToLower(ref.Kind) + "-"
	if ref.Namespace != "" {
		base += ref.Namespace + "-"
	}
	base += ref.Name + "-" + dir.String()
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
	slices.Sort(keys)
	return keys
}
