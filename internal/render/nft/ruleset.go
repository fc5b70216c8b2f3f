// Package nft renders a node's IR (package compile) into one nftables table
// of family inet and keeps the kernel in step with it: every update is a
// difference against what is programmed, so a pod joining a selector is one
// set element, and a policy change touches only the chains of the tables it
// changed. Updates are one knftables transaction, or, with an element writer,
// new chains and sets through nft and then one netlink batch, the only step
// visible to traffic, with the elements and the deletion of what the change
// stops using (see plan). It imports compile, l4 and dataplane, and knows nothing of
// Kubernetes or of the policy APIs.
//
// Layout of the table:
//
//	forward (hook forward): established/related accept; drop held
//	                        connections (cut.go); pod interfaces to
//	                        from-pod and to-pod (pods.go); jump egress;
//	                        jump ingress
//	input   (hook input):   established/related accept; drop held
//	                        connections; IPv6 neighbour discovery accept;
//	                        pod interfaces to from-pod; jump egress
//	output  (hook output):  established/related accept; drop held
//	                        connections (the node is not judged, but does
//	                        not re-open a cut)
//	cut-4, cut-6, cut-pairs-4, cut-pairs-6: connections cut by a policy
//	    change (cut.go)
//	from-pod, to-pod; sets pod-addrs-4/-6 (address . interface): a pod
//	    interface's packets carry its pod's programmed address (pods.go)
//	egress:  ip saddr vmap @egress-4   (local pod -> its egress table chain)
//	ingress: ip daddr vmap @ingress-4  (local pod -> its ingress table chain)
//	in-<hash>, eg-<hash>: one chain per IR table, shared by its pods;
//	    "<chain>-np" holds what follows the admin tier when a rule passes.
//	log-<id>: an audited decision's log and verdict (audit.go).
//	record, record-allow, record-deny; sets record-local-4/-6 and the
//	    folding sets record-allowed-4/-6, record-denied-4/-6: recording
//	    observed traffic, with "ct state new jump record" last in both
//	    base chains, only when the IR records (record.go).
//
// Node-originated traffic (kubelet probes) leaves through the output hook,
// where netpol only holds cut connections. Accept in a table chain is "return": the
// other direction still decides. Denied traffic is dropped, never rejected.
package nft

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
)

// Names of the fixed objects.
const (
	chainPrerouting = "prerouting"
	chainForward    = "forward"
	chainInput      = "input"
	chainOutput     = "output"
	chainEgress     = "egress"
	chainIngress    = "ingress"
)

// ruleset is the desired content of the table, keyed by object name, in a
// form that two rulesets can be compared piece by piece.
type ruleset struct {
	chains map[string][]rule // non-base chains
	// tableChains are the chains of the IR's tables (a table's own, its
	// NetworkPolicy tier's, its log chains): named after their content,
	// so a chain of that name holds those rules whoever wrote it, and only
	// the verdict maps make packets meet it.
	tableChains map[string]bool
	sets        map[string]*container
	maps        map[string]*container
	// record: the base chains end in the jump to the record chain
	// (record.go).
	record bool
	// podInterfaces: the base chains send packets from and to these
	// interfaces (globs) through the pod checks (pods.go).
	podInterfaces []string
}

type rule struct {
	text, comment string
}

// container is a set or a map: its declaration and elements (key -> value;
// value empty for sets). Keys are the element's fields joined by " . ".
type container struct {
	typ      string
	interval bool
	// learned: the elements are the agent's, added with a timeout as DNS
	// answers arrive (a domain set); the renderer declares the set, never
	// its elements, and keeps them through every sync.
	learned bool
	// dynamic: the kernel adds the elements itself, from the packet path,
	// each for timeout; at most size of them (the record's sets).
	dynamic  bool
	timeout  time.Duration
	size     uint64
	elements map[string]string
	comment  string
	// selection: the set holds the addresses (or endpoints) of one of the
	// IR's selections, which rules only ever match against; a full sync
	// fills it before its rules change (Renderer.prefill).
	selection bool
}

func newRuleset() *ruleset {
	return &ruleset{chains: map[string][]rule{}, tableChains: map[string]bool{}, sets: map[string]*container{}, maps: map[string]*container{}}
}

// builder computes rulesets and remembers the sets and chains of the last
// one, so that the next ruleset reuses the containers of the sets whose
// members did not change (diff skips them by identity) and the chains of the
// tables it already had (a table's name is a hash of its rules). A pass
// that moves one pod among 77k set elements then formats a handful of
// elements, not all of them.
type builder struct {
	sets      map[string]builtSet
	endpoints map[string]builtEndpoints
	tables    map[string]map[string][]rule // IR table name -> its chains (log chains too)
	record    bool                         // the tables' drops go through record-deny
}

type builtSet struct {
	prefixes []netip.Prefix
	v4, v6   *container
}

type builtEndpoints struct {
	elements []compile.Endpoint
	v4, v6   *container
}

// build computes the ruleset of an IR with a builder of its own.
func build(ir *compile.IR) *ruleset { return new(builder).build(ir) }

// build computes the ruleset of an IR. Containers are never modified after
// build returns: rulesets share them.
func (b *builder) build(ir *compile.IR) *ruleset {
	rs := newRuleset()
	drop := "drop"
	if ir.Record {
		recordObjects(rs, ir)
		drop = "goto " + chainRecordDeny
	}
	if b.record != ir.Record {
		b.tables = nil // their drops change
	}
	verdictMaps(rs, ir, "", func(p compile.LocalPod) (string, string) { return p.Ingress, p.Egress })
	podObjects(rs, ir)
	sets := make(map[string]builtSet, len(ir.Sets))
	for _, s := range ir.Sets {
		if old, ok := b.sets[s.Name]; ok && slices.Equal(old.prefixes, s.Prefixes) {
			rs.sets[s.Name+"-4"], rs.sets[s.Name+"-6"] = old.v4, old.v6
			sets[s.Name] = old
			continue
		}
		v4 := &container{typ: "ipv4_addr", interval: !s.Hosts, elements: map[string]string{}, comment: s.Key, selection: true}
		v6 := &container{typ: "ipv6_addr", interval: !s.Hosts, elements: map[string]string{}, comment: s.Key, selection: true}
		for _, key := range addrElements(s) {
			c := v4
			if strings.Contains(key, ":") {
				c = v6
			}
			c.elements[key] = ""
		}
		rs.sets[s.Name+"-4"], rs.sets[s.Name+"-6"] = v4, v6
		sets[s.Name] = builtSet{s.Prefixes, v4, v6}
	}
	endpoints := make(map[string]builtEndpoints, len(ir.EndpointSets))
	for _, s := range ir.EndpointSets {
		if old, ok := b.endpoints[s.Name]; ok && slices.Equal(old.elements, s.Elements) {
			rs.sets[s.Name+"-4"], rs.sets[s.Name+"-6"] = old.v4, old.v6
			endpoints[s.Name] = old
			continue
		}
		v4 := &container{typ: "ipv4_addr . inet_proto . inet_service", elements: map[string]string{}, comment: s.Key, selection: true}
		v6 := &container{typ: "ipv6_addr . inet_proto . inet_service", elements: map[string]string{}, comment: s.Key, selection: true}
		for _, e := range s.Elements {
			c := v4
			if !e.IP.Is4() {
				c = v6
			}
			c.elements[e.IP.String()+" . "+protoName(e.Port.Proto)+" . "+fmt.Sprint(e.Port.Num)] = ""
		}
		rs.sets[s.Name+"-4"], rs.sets[s.Name+"-6"] = v4, v6
		endpoints[s.Name] = builtEndpoints{s.Elements, v4, v6}
	}
	for _, s := range ir.DomainSets {
		comment := "learned from DNS: " + strings.Join(s.Patterns, ", ")
		rs.sets[s.Name+"-4"] = &container{typ: "ipv4_addr", learned: true, elements: map[string]string{}, comment: comment}
		rs.sets[s.Name+"-6"] = &container{typ: "ipv6_addr", learned: true, elements: map[string]string{}, comment: comment}
	}
	tables := make(map[string]map[string][]rule, len(ir.Tables))
	for _, t := range ir.Tables {
		chains, ok := b.tables[t.Name]
		if !ok {
			chains = tableChains(t, drop)
		}
		tables[t.Name] = chains
		for name, c := range chains {
			rs.chains[name] = c
			rs.tableChains[name] = true
		}
	}
	stagedMaps(rs, ir)
	b.sets, b.endpoints, b.tables, b.record = sets, endpoints, tables, ir.Record
	return rs
}

// verdictMaps adds the maps <prefix>ingress-4/-6 and <prefix>egress-4/-6
// from each local pod's addresses to the chains that chains names for it,
// and the rules of the ingress and egress chains that look them up, ahead
// of the lookups already there.
func verdictMaps(rs *ruleset, ir *compile.IR, prefix string, chains func(compile.LocalPod) (ingress, egress string)) {
	rs.chains[chainEgress] = append([]rule{{text: "ip saddr vmap @" + prefix + "egress-4"}, {text: "ip6 saddr vmap @" + prefix + "egress-6"}}, rs.chains[chainEgress]...)
	rs.chains[chainIngress] = append([]rule{{text: "ip daddr vmap @" + prefix + "ingress-4"}, {text: "ip6 daddr vmap @" + prefix + "ingress-6"}}, rs.chains[chainIngress]...)
	for _, dir := range []string{"ingress-", "egress-"} {
		rs.maps[prefix+dir+"4"] = &container{typ: "ipv4_addr : verdict", elements: map[string]string{}}
		rs.maps[prefix+dir+"6"] = &container{typ: "ipv6_addr : verdict", elements: map[string]string{}}
	}
	for _, p := range ir.Pods {
		ingress, egress := chains(p)
		for _, ip := range p.IPs {
			fam := family(ip)
			if ingress != "" {
				rs.maps[prefix+"ingress-"+fam].elements[ip.String()] = "jump " + ingress
			}
			if egress != "" {
				rs.maps[prefix+"egress-"+fam].elements[ip.String()] = "jump " + egress
			}
		}
	}
}

// tableChains returns the chains of one IR table: its own, and the log
// chains its audited rules go to. When an admin rule passes, what follows
// the admin tier goes to a second chain that the pass jumps to. drop is
// the verdict that denies ("drop", or the goto to record-deny).
func tableChains(t *compile.Table, drop string) map[string][]rule {
	chains := map[string][]rule{}
	name, rest := t.Name, t.Name
	for _, r := range t.Rules {
		if r.Action == compile.Pass {
			rest = t.Name + "-np"
			break
		}
	}
	for _, r := range t.Rules {
		chain := name
		if r.Tier != policy.TierAdmin {
			chain = rest
		}
		chains[chain] = append(chains[chain], ruleTexts(t.Dir, r, ruleVerdict(chains, t, r, rest, drop))...)
	}
	if rest != name {
		chains[name] = append(chains[name], rule{text: "goto " + rest})
	}
	if _, ok := chains[rest]; !ok {
		chains[rest] = nil // an empty chain is a valid jump target
	}
	if t.Default == compile.Drop && (!t.LogOnly || t.DefaultAudit != nil) {
		var refs []string
		for _, r := range t.IsolatedBy {
			refs = append(refs, r.String())
		}
		verdict := drop
		if t.LogOnly {
			verdict = "return"
		}
		chains[rest] = append(chains[rest], rule{text: logVerdict(chains, t.DefaultAudit, verdict), comment: "isolated by " + strings.Join(refs, ", ")})
	}
	return chains
}

// ruleTexts renders one IR rule, once per address family that it needs.
func ruleTexts(dir policy.Direction, r compile.Rule, verdict string) []rule {
	comment := r.From.String()
	addr := "saddr"
	if dir == policy.Egress {
		addr = "daddr"
	}
	if r.Endpoints != "" {
		return []rule{
			{text: fmt.Sprintf("ip %s . meta l4proto . th dport @%s-4 %s", addr, r.Endpoints, verdict), comment: comment},
			{text: fmt.Sprintf("ip6 %s . meta l4proto . th dport @%s-6 %s", addr, r.Endpoints, verdict), comment: comment},
		}
	}
	peers := []string{""}                     // any address
	if set := r.Peer + r.Domains; set != "" { // at most one is set
		peers = []string{fmt.Sprintf("ip %s @%s-4", addr, set), fmt.Sprintf("ip6 %s @%s-6", addr, set)}
	}
	var out []rule
	for _, peer := range peers {
		for _, ports := range portMatches(r.Ports) {
			out = append(out, rule{text: join(peer, ports, verdict), comment: comment})
		}
	}
	return out
}

// portMatches are the matches of protocol and destination port ranges
// (sorted by protocol, as compile merges them), one per range ("" when any
// port matches): the rule is written once per range rather than with an
// anonymous set of the ranges. The kernel names every anonymous set it
// makes by scanning the names of all the table's sets, and nft reads every
// set of the table before it writes a rule: with a set per rule, adding
// one policy's chain to a 10k-pod node took ~45 ms instead of ~10. Past
// portSetAfter ranges, though, the ranges of each protocol go in one
// anonymous set: a tenant's rule of 1,000 ports must be a few kernel rules,
// not 1,000 per peer set.
func portMatches(rs []l4.Range) []string {
	if len(rs) == 0 {
		return []string{""}
	}
	if len(rs) > portSetAfter {
		var out []string
		for i := 0; i < len(rs); {
			j := i
			var items []string
			for ; j < len(rs) && rs[j].Proto == rs[i].Proto; j++ {
				items = append(items, portText(rs[j]))
			}
			out = append(out, "meta l4proto "+protoName(rs[i].Proto)+" th dport { "+strings.Join(items, ", ")+" }")
			i = j
		}
		return out
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = "meta l4proto " + protoName(r.Proto) + " th dport " + portText(r)
	}
	return out
}

// portSetAfter is the most port ranges a rule is written once per range
// for (see portMatches).
const portSetAfter = 8

// portText is a port range as nft writes it: "80" or "9000-9100".
func portText(r l4.Range) string {
	port := strconv.Itoa(int(r.First))
	if r.Last != r.First {
		port += "-" + strconv.Itoa(int(r.Last))
	}
	return port
}

func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

func protoName(p l4.Protocol) string { return strings.ToLower(p.String()) }

func family(ip netip.Addr) string {
	if ip.Is4() {
		return "4"
	}
	return "6"
}

// addrElements are the elements of an address set: its prefixes, or for a
// static set (compile.AddrSet.Static) its runs of neighbouring prefixes,
// each one range. A block with 2,000 exceptions spread over it is 2,001
// ranges, where its 218,048 prefixes took nft 19.5 s and 630 MB to load.
// A pod's address stays an element of its own: a pod joining a selector is
// one element added, never a range split.
func addrElements(s *compile.AddrSet) []string {
	out := make([]string, 0, len(s.Prefixes))
	if !s.Static {
		for _, p := range s.Prefixes {
			out = append(out, prefixString(p))
		}
		return out
	}
	for i := 0; i < len(s.Prefixes); {
		first, last := s.Prefixes[i], compile.LastAddr(s.Prefixes[i])
		j := i + 1
		for ; j < len(s.Prefixes); j++ {
			next := last.Next()
			if !next.IsValid() || s.Prefixes[j].Addr() != next {
				break
			}
			last = compile.LastAddr(s.Prefixes[j])
		}
		if j == i+1 {
			out = append(out, prefixString(first))
		} else {
			out = append(out, first.Addr().String()+"-"+last.String())
		}
		i = j
	}
	return out
}

func prefixString(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}
