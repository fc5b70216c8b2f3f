package compile

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
)

// Node compiles the IR of one node: its pods that policies can select
// (host-network pods never are).
func Node(e *engine.Engine, node string) *IR { return new(Compiler).Node(e, node) }

// Compiler compiles the IR of a node again and again as the engine changes
// (the agent does, on every change), and reuses the sets of the last IR
// whose members are the same pods with the same addresses (and, for named
// ports, the same ports): comparing a set's members is much cheaper than
// listing their addresses and sorting them, and most sets do not change
// when one pod or one policy does. Not safe for concurrent use.
//
// Tables are kept too: a pod whose policies are the same ones as last time
// (engine.ProgramKey) and that did not change itself keeps its tables, and
// only their sets are made again, from the new engine.
type Compiler struct {
	// AuditDenies logs every deny (deny rules of all tiers and NetworkPolicy
	// isolation), whatever the policies' audit annotations say.
	AuditDenies bool
	// Record logs every new connection of the node's pods, allowed or
	// denied, for the agent's record of observed traffic (IR.Record).
	Record bool
	// MaxPolicyTerms: a NetworkPolicy with more terms is refused
	// (limits.go); 0 is DefaultMaxPolicyTerms.
	MaxPolicyTerms int

	last       map[string]cachedSet // by set name
	lastTables map[tableKey]cachedTable
	names      *namer // names.go
}

// tableKey is what a table compiled for one pod depends on.
type tableKey struct {
	prog engine.ProgramKey
	pod  *state.Pod
	dir  policy.Direction
}

// cachedTable is a pod's table (nil when no policy applies) with the peers
// whose sets its rules name and the policies it leaves out as refused.
type cachedTable struct {
	table   *Table // its Pods left empty
	nameKey string // what its name stands for (tableName)
	uses    []setUse
	refused []*Refusal
}

// setUse is a set a table names: the addresses of the peers of a rule, the
// names of its domainNames peers, or, with named, the endpoints of the
// rule's named ports on its peers.
type setUse struct {
	peers []engine.PeerSet
	named []policy.PortMatch
}

// cachedSet is a set of an IR with the pods it was made from.
type cachedSet struct {
	key       string
	pods      []*state.Pod
	addrs     *AddrSet
	endpoints *EndpointSet
}

// reuse returns the set called name made from the same pods, if the last IR
// had it, and keeps it for the next.
func (c *nodeCompile) reuse(name, key string, pods iter.Seq[*state.Pod], ports bool) (cachedSet, bool) {
	s, ok := c.last[name]
	if !ok || s.key != key {
		return s, false
	}
	i := 0
	for p := range pods {
		if i == len(s.pods) {
			return s, false
		}
		q := s.pods[i]
		if p != q && (!slices.Equal(p.IPs, q.IPs) || p.HostNetwork != q.HostNetwork || ports && !slices.Equal(p.Ports, q.Ports)) {
			return s, false
		}
		i++
	}
	if i != len(s.pods) {
		return s, false
	}
	c.next[name] = s
	return s, true
}

// Node compiles the IR of node.
func (k *Compiler) Node(e *engine.Engine, node string) *IR {
	if k.names == nil {
		k.names = newNamer()
	}
	k.names.roll()
	return k.node(e, node)
}

// node compiles the IR of node in the namer's current pass.
func (k *Compiler) node(e *engine.Engine, node string) *IR {
	c := &nodeCompile{names: k.names, e: e, ir: &IR{Node: node, Record: k.Record}, tables: map[string]*Table{}, sets: map[string]*AddrSet{}, endpoints: map[string]*EndpointSet{},
		domains:  map[string]*DomainSet{},
		refusals: map[*policy.Policy]*Refusal{}, maxTerms: cmp.Or(k.MaxPolicyTerms, DefaultMaxPolicyTerms),
		auditDenies: k.AuditDenies, last: k.last, next: map[string]cachedSet{},
		lastTables: k.lastTables, nextTables: map[tableKey]cachedTable{}}
	defer func() { k.last, k.lastTables = c.next, c.nextTables }()
	for _, pod := range e.Cluster().Pods {
		if pod.Node != node || pod.HostNetwork || len(pod.IPs) == 0 {
			continue
		}
		lp := LocalPod{Pod: pod.Key(), IPs: pod.IPs}
		lp.Ingress = c.table(pod, policy.Ingress)
		lp.Egress = c.table(pod, policy.Egress)
		c.ir.Pods = append(c.ir.Pods, lp)
	}
	for _, t := range c.tables {
		c.ir.Tables = append(c.ir.Tables, t)
	}
	for _, s := range c.sets {
		c.ir.Sets = append(c.ir.Sets, s)
	}
	for _, s := range c.endpoints {
		c.ir.EndpointSets = append(c.ir.EndpointSets, s)
	}
	for _, s := range c.domains {
		c.ir.DomainSets = append(c.ir.DomainSets, s)
	}
	for _, r := range c.refused {
		c.ir.Refused = append(c.ir.Refused, r)
	}
	sort.Slice(c.ir.Refused, func(i, j int) bool { return c.ir.Refused[i].Policy.String() < c.ir.Refused[j].Policy.String() })
	sort.Slice(c.ir.DomainSets, func(i, j int) bool { return c.ir.DomainSets[i].Name < c.ir.DomainSets[j].Name })
	sort.Slice(c.ir.Tables, func(i, j int) bool { return c.ir.Tables[i].Name < c.ir.Tables[j].Name })
	sort.Slice(c.ir.Sets, func(i, j int) bool { return c.ir.Sets[i].Name < c.ir.Sets[j].Name })
	sort.Slice(c.ir.EndpointSets, func(i, j int) bool { return c.ir.EndpointSets[i].Name < c.ir.EndpointSets[j].Name })
	return c.ir
}

// nodeCompile is one call of Compiler.Node: the IR it builds, indexed by
// name while it does, and the sets and tables it may take from the last
// call.
type nodeCompile struct {
	names     *namer
	e         *engine.Engine
	ir        *IR
	tables    map[string]*Table // by name (a hash of the content)
	sets      map[string]*AddrSet
	endpoints map[string]*EndpointSet
	domains   map[string]*DomainSet
	auditedNP map[policy.Ref]bool // NetworkPolicies that log their denies; nil until needed
	// refusals are the policies looked at, with their refusal (nil: not
	// refused); refused those refused in this IR.
	refusals    map[*policy.Policy]*Refusal
	refused     map[policy.Ref]*Refusal
	maxTerms    int
	auditDenies bool
	// last are the sets and tables of the previous IR that may be reused,
	// next those of this IR that the next one may reuse.
	last, next             map[string]cachedSet
	lastTables, nextTables map[tableKey]cachedTable
	uses                   []setUse   // of the table being compiled
	tableRefused           []*Refusal // of the table being compiled
}

// table compiles one direction of pod and returns the name of its table,
// shared with every pod whose rules came out the same.
func (c *nodeCompile) table(pod *state.Pod, dir policy.Direction) string {
	key := tableKey{c.e.ProgramKey(pod), pod, dir}
	ct, ok := c.lastTables[key]
	if !ok {
		c.uses, c.tableRefused = nil, nil
		ct = cachedTable{table: c.compileTable(pod, dir)}
		ct.uses, ct.refused = c.uses, c.tableRefused
		if ct.table != nil {
			ct.nameKey = tableText(ct.table)
		}
	} else {
		for i := range ct.uses {
			u := &ct.uses[i]
			for j := range u.peers {
				u.peers[j] = u.peers[j].For(c.e) // and the cache lets go of the old engine
			}
			switch {
			case u.named != nil:
				c.endpointSet(u.peers, u.named)
			case u.peers[0].Kind == policy.PeerDomains:
				c.domainSet(u.peers)
			default:
				c.addrSet(u.peers)
			}
		}
		// The names of the last pass, kept for this one.
		if t := ct.table; t != nil {
			c.names.name(tablePrefix(t), ct.nameKey)
			keepAudits(c.names, t)
		}
	}
	for _, r := range ct.refused {
		if c.refused == nil {
			c.refused = map[policy.Ref]*Refusal{}
		}
		c.refused[r.Policy] = r
	}
	c.nextTables[key] = ct
	if ct.table == nil {
		return ""
	}
	t, ok := c.tables[ct.table.Name]
	if !ok {
		copied := *ct.table // Pods are this IR's
		t = &copied
		c.tables[t.Name] = t
	}
	t.Pods = append(t.Pods, pod.Key())
	return t.Name
}

// compileTable compiles one direction of pod, nil when no policy applies.
func (c *nodeCompile) compileTable(pod *state.Pod, dir policy.Direction) *Table {
	prog := c.e.Program(pod, dir)
	if prog.Empty() {
		return nil
	}
	t := &Table{Dir: dir, Default: Accept}
	for _, tp := range prog.Tiers {
		for _, ar := range tp.Rules {
			t.Rules = c.rules(t.Rules, pod, dir, tp.Tier, ar)
		}
	}
	if rest, by := prog.Rest(); rest == engine.Deny {
		t.Default, t.IsolatedBy = Drop, by
		if c.isolationAudited(by) {
			t.DefaultAudit = isolationAudit(c.names, dir, by)
		}
	}
	if c.auditDenies {
		auditDenies(c.names, t)
	}
	t.Name = tableName(c.names, t)
	return t
}

// rules appends the kernel rules of one policy rule. Its peers are an OR
// with the same ports and action, so they share one rule over one set of
// the addresses of their pods and nodes (or a rule each over their own
// sets, while that is a few rules: splitPeers), one over one set of their
// ipBlocks, one over their domain names and one over the endpoints of the
// rule's named ports: a rule of p peers and n ports is O(p + n) in the
// kernel, never p rules of n port matches (a tenant's 1,000 peers x 1,000
// ports were 2,000,000 kernel rules).
func (c *nodeCompile) rules(out []Rule, pod *state.Pod, dir policy.Direction, tier policy.Tier, ar engine.AppliedRule) []Rule {
	r := ar.Rule
	base := Rule{Tier: tier, Action: action(tier, ar.Outcome()),
		From: RuleRef{Tier: tier.String(), Policy: ar.Policy.Ref, Rule: r.Label()}}
	if ar.Policy.Audit.Logs(r.Action) {
		base.Audit = ruleAudit(c.names, dir, base)
	}
	if !r.AllPorts && len(r.Ports) == 0 {
		return out // an Allow that fails closed: matches nothing
	}
	if refused := c.refusal(ar.Policy); refused != nil {
		if !slices.Contains(c.tableRefused, refused) {
			c.tableRefused = append(c.tableRefused, refused)
		}
		return out // allows nothing; its isolation is the table's default
	}
	var ranges []l4.Range
	var named []policy.PortMatch
	for _, pm := range r.Ports {
		switch {
		case pm.Named == "":
			ranges = append(ranges, pm.Range)
		case dir == policy.Ingress:
			// The destination is the local pod itself.
			for _, cp := range pod.Ports {
				if cp.Name == pm.Named && (pm.NamedProto == 0 || pm.NamedProto == cp.Port.Proto) {
					ranges = append(ranges, l4.Range{Proto: cp.Port.Proto, First: cp.Port.Num, Last: cp.Port.Num})
				}
			}
		default:
			named = append(named, pm)
		}
	}
	ranges = mergeRanges(ranges)
	var addrs, blocks, domains []engine.PeerSet
	if r.AllPeers {
		addrs = []engine.PeerSet{{}} // any address: no set
	}
	for _, peer := range ar.Peers {
		switch peer.Kind {
		case policy.PeerDomains:
			domains = append(domains, peer)
		case policy.PeerIPBlock:
			blocks = append(blocks, peer)
		default:
			addrs = append(addrs, peer)
		}
	}
	if len(domains) > 0 {
		k := base
		k.Ports, k.Domains = ranges, c.domainSet(domains)
		c.uses = append(c.uses, setUse{peers: domains})
		out = append(out, k) // named ports never come with names (validation)
	}
	if r.AllPorts || len(ranges) > 0 {
		// Pods and nodes come and go one address at a time; ipBlocks
		// change only with their policy, and their set is Static.
		for _, peers := range append(splitPeers(addrs, max(len(ranges), 1)), blocks) {
			if len(peers) == 0 {
				continue
			}
			k := base
			k.Ports = ranges
			if !r.AllPeers {
				k.Peer = c.addrSet(peers)
				c.uses = append(c.uses, setUse{peers: peers})
			}
			out = append(out, k)
		}
	}
	addrs = append(addrs, blocks...)
	if len(addrs) == 0 {
		return out
	}
	if len(named) > 0 {
		k := base
		k.Endpoints = c.endpointSet(addrs, named)
		c.uses = append(c.uses, setUse{peers: addrs, named: named})
		out = append(out, k)
	}
	return out
}

// splitPeers groups the pod and node peers of one rule, whose ports make
// ports port matches, into the sets its kernel rules match: one set per
// peer, shared by every rule of the node that names the same selection,
// when peers x ports is at most maxSplitRules; else one set of their union,
// for that rule alone. A union copies its members: a rule naming a
// selection of 9,000 pods and a small one, written in each of 100
// namespaces, made 100 sets of ~9,000 addresses (368,000 elements on a
// node of the 10k cluster, where the shared sets hold a twentieth of
// that). Bounding the product keeps a tenant's kernel rules per term where
// the union kept them (a 10,000-term policy of 8 peers x 8 ports would
// otherwise be 80,000 rules).
func splitPeers(addrs []engine.PeerSet, ports int) [][]engine.PeerSet {
	addrs = uniquePeers(addrs)
	if len(addrs) == 0 || len(addrs)*ports > maxSplitRules || addrs[0].Key == "" {
		return [][]engine.PeerSet{addrs}
	}
	out := make([][]engine.PeerSet, len(addrs))
	for i := range addrs {
		out[i] = addrs[i : i+1]
	}
	return out
}

// maxSplitRules is the most peers x port matches of one rule for which
// each peer gets kernel rules of its own (see splitPeers).
const maxSplitRules = 8

// action is the kernel's action of a rule of tier whose outcome is o. Next
// (a Pass) leaves the admin tier for the NetworkPolicy tier, or ends the
// baseline tier, after which the default allows.
func action(tier policy.Tier, o engine.Outcome) Action {
	switch {
	case o == engine.Accept:
		return Accept
	case o == engine.Deny:
		return Drop
	case tier == policy.TierBaseline:
		return EndTier
	}
	return Pass
}

// peersKey names the selection of some peers (of one rule), as AddrSet.Key
// and EndpointSet.Key show it: the peer's own key for one peer, and for
// several their keys, each with its length so that no two lists of keys
// give the same text.
func peersKey(peers []engine.PeerSet) string {
	if len(peers) == 1 {
		return peers[0].Key
	}
	var b strings.Builder
	b.WriteString("any of")
	for _, p := range peers {
		fmt.Fprintf(&b, " %d:%s", len(p.Key), p.Key)
	}
	return b.String()
}

// uniquePeers sorts peers by key and drops repeated ones, so that rules
// with the same peers in another order share a set.
func uniquePeers(peers []engine.PeerSet) []engine.PeerSet {
	if len(peers) < 2 {
		return peers
	}
	peers = slices.Clone(peers)
	slices.SortStableFunc(peers, func(a, b engine.PeerSet) int { return strings.Compare(a.Key, b.Key) })
	return slices.CompactFunc(peers, func(a, b engine.PeerSet) bool { return a.Key == b.Key })
}

// peerPods yields the pods of the PeerPods peers among peers, in order:
// what a set of their addresses is made from, besides the keys.
func peerPods(peers []engine.PeerSet) iter.Seq[*state.Pod] {
	return func(yield func(*state.Pod) bool) {
		for _, p := range peers {
			for pod := range p.All() {
				if !yield(pod) {
					return
				}
			}
		}
	}
}

// addrSet returns the name of the set of the addresses of peers (of one
// rule, none of them domainNames), creating it.
func (c *nodeCompile) addrSet(peers []engine.PeerSet) string {
	peers = uniquePeers(peers)
	key := peersKey(peers)
	hosts := !slices.ContainsFunc(peers, func(p engine.PeerSet) bool { return p.Kind == policy.PeerIPBlock })
	name := c.names.name(addrSetPrefix(hosts), key)
	if _, ok := c.sets[name]; ok {
		return name
	}
	// Pods come and go; an ipBlock is its key. Node addresses are not
	// kept: sets with nodes are made again each time.
	cached := !slices.ContainsFunc(peers, func(p engine.PeerSet) bool { return p.Kind == policy.PeerNodes })
	if cached {
		if last, ok := c.reuse(name, key, peerPods(peers), false); ok {
			c.sets[name] = last.addrs
			return name
		}
	}
	s := &AddrSet{Name: name, Key: key, Hosts: hosts, Static: !slices.ContainsFunc(peers, func(p engine.PeerSet) bool { return p.Kind != policy.PeerIPBlock })}
	for _, peer := range peers {
		switch peer.Kind {
		case policy.PeerPods:
			for p := range peer.All() {
				for _, ip := range p.IPs {
					s.Prefixes = append(s.Prefixes, netip.PrefixFrom(ip, ip.BitLen()))
				}
			}
		case policy.PeerNodes:
			for _, n := range peer.Nodes() {
				for _, ip := range n.IPs {
					s.Prefixes = append(s.Prefixes, netip.PrefixFrom(ip, ip.BitLen()))
				}
			}
		case policy.PeerIPBlock:
			s.Prefixes = append(s.Prefixes, Subtract(peer.Block.CIDR, peer.Block.Except)...)
		}
	}
	s.Prefixes = Normalize(s.Prefixes)
	if cached {
		c.next[name] = cachedSet{key: key, pods: slices.Collect(peerPods(peers)), addrs: s}
	}
	c.sets[name] = s
	return name
}

// domainSet returns the name of the set of the addresses of domainNames
// peers (of one rule), creating it (empty: the agent fills it).
func (c *nodeCompile) domainSet(peers []engine.PeerSet) string {
	peers = uniquePeers(peers)
	key := peersKey(peers)
	name := c.names.name(DomainSetPrefix, key)
	if _, ok := c.domains[name]; !ok {
		s := &DomainSet{Name: name, Key: key}
		seen := map[string]bool{}
		for _, peer := range peers {
			for _, p := range peer.Domains {
				if text := p.String(); !seen[text] {
					seen[text] = true
					s.Patterns = append(s.Patterns, text)
				}
			}
		}
		c.domains[name] = s
	}
	return name
}

// endpointSet returns the name of the set of (address, protocol, port) of
// the pods of peers (of one rule; the zero peer: all pods) that declare
// one of the named ports.
func (c *nodeCompile) endpointSet(peers []engine.PeerSet, named []policy.PortMatch) string {
	peers = uniquePeers(peers)
	names := make([]string, len(named))
	for i, pm := range named {
		names[i] = pm.String()
	}
	slices.Sort(names)
	names = slices.Compact(names)
	key := "port " + strings.Join(names, ",") + " of " + peersKey(peers)
	if len(peers) == 1 && peers[0].Kind == 0 {
		key = "port " + strings.Join(names, ",") + " of all pods"
	}
	name := c.names.name("e-", key)
	if _, ok := c.endpoints[name]; ok {
		return name
	}
	// Each peer's pods, with the peer (an ipBlock takes only the pod's
	// addresses inside it).
	type member struct {
		pod  *state.Pod
		peer *engine.PeerSet
	}
	var members []member
	for i := range peers {
		peer := &peers[i]
		switch peer.Kind {
		case 0:
			for _, p := range c.e.Cluster().Pods {
				members = append(members, member{p, peer})
			}
		case policy.PeerPods:
			for p := range peer.All() {
				members = append(members, member{p, peer})
			}
		case policy.PeerIPBlock:
			for _, p := range c.e.Cluster().Pods {
				if slices.ContainsFunc(p.IPs, peer.Block.Contains) {
					members = append(members, member{p, peer})
				}
			}
		}
	}
	pods := func(yield func(*state.Pod) bool) {
		for _, m := range members {
			if !yield(m.pod) {
				return
			}
		}
	}
	if last, ok := c.reuse(name, key, pods, true); ok {
		c.endpoints[name] = last.endpoints
		return name
	}
	s := &EndpointSet{Name: name, Key: key}
	c.next[name] = cachedSet{key: key, pods: slices.Collect(iter.Seq[*state.Pod](pods)), endpoints: s}
	for _, m := range members {
		if m.pod.HostNetwork {
			continue
		}
		for _, cp := range m.pod.Ports {
			if !slices.ContainsFunc(named, func(pm policy.PortMatch) bool {
				return cp.Name == pm.Named && (pm.NamedProto == 0 || pm.NamedProto == cp.Port.Proto)
			}) {
				continue
			}
			for _, ip := range m.pod.IPs {
				if m.peer.Kind == policy.PeerIPBlock && !m.peer.Block.Contains(ip) {
					continue
				}
				s.Elements = append(s.Elements, Endpoint{IP: ip, Port: cp.Port})
			}
		}
	}
	slices.SortFunc(s.Elements, func(a, b Endpoint) int {
		if c := a.IP.Compare(b.IP); c != 0 {
			return c
		}
		if a.Port.Proto != b.Port.Proto {
			return int(a.Port.Proto) - int(b.Port.Proto)
		}
		return int(a.Port.Num) - int(b.Port.Num)
	})
	s.Elements = slices.Compact(s.Elements)
	c.endpoints[name] = s
	return name
}

// tableName names a table after everything that makes it behave as it
// does and log what it logs (tableText), so that equal tables get equal
// names on every node and every run, and a table whose rules or audits
// change gets a new name (the renderer keeps the chains of a name it has
// seen); names gives no two tables one name.
func tableName(names *namer, t *Table) string {
	return names.name(tablePrefix(t), tableText(t))
}

// tablePrefix starts the names of the tables of t's kind: "in-", "eg-",
// and "st-" before either for log-only ones.
func tablePrefix(t *Table) string {
	prefix := "in-"
	if t.Dir == policy.Egress {
		prefix = "eg-"
	}
	if t.LogOnly {
		prefix = "st-" + prefix
	}
	return prefix
}

// tableText is everything that makes t behave as it does and log what it
// logs. It is written out by hand: fmt took half of a 10k-pod node's
// compile.
func tableText(t *Table) string {
	b := make([]byte, 0, 64+96*len(t.Rules))
	b = append(append(append(b, t.Dir.String()...), ' '), t.Default...)
	for _, r := range t.IsolatedBy {
		b = append(append(b, ' '), r.String()...)
	}
	b = appendAudit(b, t.DefaultAudit)
	if t.LogOnly {
		b = append(b, " log-only"...)
	}
	for _, r := range t.Rules {
		b = append(b, '\n')
		b = append(append(b, r.Tier.String()...), ' ')
		b = append(append(b, r.Action...), ' ')
		b = append(append(b, r.Peer...), ' ')
		b = append(b, r.Endpoints...)
		if r.Domains != "" { // absent from older names: tables without names keep theirs
			b = append(append(b, " domains "...), r.Domains...)
		}
		for _, p := range r.Ports {
			b = append(append(b, ' '), p.String()...)
		}
		b = append(append(append(append(b, ' '), r.From.Policy.String()...), ' '), r.From.Rule...)
		b = appendAudit(b, r.Audit)
	}
	return string(b)
}

func appendAudit(b []byte, a *Audit) []byte {
	if a == nil {
		return b
	}
	return append(append(b, " log "...), a.ID...)
}

// shortHash is 48 bits of a hash of s, as 12 hex digits; a variable so
// that a test can make two keys collide (export_test.go).
var shortHash = func(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// mergeRanges sorts ranges by protocol and start and joins the ones that
// overlap or touch, so that interval sets never hold overlapping elements.
func mergeRanges(rs []l4.Range) []l4.Range {
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b l4.Range) int {
		if a.Proto != b.Proto {
			return int(a.Proto) - int(b.Proto)
		}
		return int(a.First) - int(b.First)
	})
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Proto == last.Proto && int(r.First) <= int(last.Last)+1 {
			last.Last = max(last.Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	return out
}
