// Package compile turns the engine's decisions for the pods of one node into
// an intermediate representation that any dataplane can render: per local
// pod an ordered ingress and an egress rule table (6-tuples with actions and
// tiers), plus the address and endpoint sets the tables refer to. This is the
// Configurator of seeds/contiv-vpp-policy-plugin.txt; renderers (nftables,
// security groups) are the Renderers. It imports engine, policy, state and l4,
// and nothing that renders.
package compile

import (
	"io"
	"net/netip"
	"strings"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
)

// IR is everything one node must enforce.
type IR struct {
	Node string `json:"node"`
	// Pods are the node's pods that policies can select, by name.
	Pods []LocalPod `json:"pods"`
	// Tables are the distinct rule tables; pods with equal rules share one.
	Tables []*Table `json:"tables"`
	// Sets are the address sets and EndpointSets the endpoint sets that
	// the tables name, by name.
	Sets         []*AddrSet     `json:"sets"`
	EndpointSets []*EndpointSet `json:"endpointSets,omitempty"`
	// DomainSets are the addresses that domainNames peers stand for:
	// learned at run time from DNS answers, none at compile time.
	DomainSets []*DomainSet `json:"domainSets,omitempty"`
	// Record: every new connection of the node's pods is logged, with the
	// verdict it met, for the record of observed traffic (package observed).
	// It changes no verdict.
	Record bool `json:"record,omitempty"`
	// Refused are the NetworkPolicies left out as too large (limits.go):
	// they isolate their pods and allow nothing.
	Refused []*Refusal `json:"refused,omitempty"`
	// PodInterfaces are the node's pod interfaces, as globs ("veth*"):
	// a packet from or to one of them must carry an address of the pod
	// behind that interface (LocalPod.Interface), or it is dropped. None:
	// packets are judged by address alone (an IR compiled off the node).
	PodInterfaces []string `json:"podInterfaces,omitempty"`
}

// LocalPod binds a pod's addresses to its tables. An empty table name means
// no policy applies in that direction: everything is allowed.
type LocalPod struct {
	Pod     string       `json:"pod"`
	IPs     []netip.Addr `json:"ips"`
	Ingress string       `json:"ingress,omitempty"`
	Egress  string       `json:"egress,omitempty"`
	// StagedIngress and StagedEgress name log-only tables (Table.LogOnly)
	// that staged policies decide in; empty when none applies.
	StagedIngress string `json:"stagedIngress,omitempty"`
	StagedEgress  string `json:"stagedEgress,omitempty"`
	// Interface is the node's end of the pod's link (its veth, or the
	// bridge it hangs on), where its packets enter; empty while unknown,
	// and then, with PodInterfaces, its packets are dropped.
	Interface string `json:"interface,omitempty"`
}

// ValidInterface reports whether name can be a Linux interface name that
// reaches a renderer: 1-15 letters, digits and "_.@-". Names outside it
// (Linux takes almost any byte) are refused rather than quoted: a
// renderer's language need not have escapes for them.
func ValidInterface(name string) bool { return validInterface(name, false) }

// ValidInterfaceGlob is ValidInterface with an optional "*" at the end,
// which stands for any rest ("veth*").
func ValidInterfaceGlob(glob string) bool { return validInterface(glob, true) }

// MatchInterface reports whether interface name matches one of globs.
func MatchInterface(globs []string, name string) bool {
	for _, g := range globs {
		if prefix, ok := strings.CutSuffix(g, "*"); ok && strings.HasPrefix(name, prefix) || g == name {
			return true
		}
	}
	return false
}

func validInterface(name string, glob bool) bool {
	if glob && len(name) > 1 && name[len(name)-1] == '*' {
		name = name[:len(name)-1]
	}
	if name == "" || len(name) > 15 || name == "." || name == ".." {
		return false
	}
	for _, c := range []byte(name) {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '@' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Table is the ordered rule list of one direction. Rules are evaluated in
// order, the first match decides; when none matches, Default decides.
type Table struct {
	Name  string           `json:"name"`
	Dir   policy.Direction `json:"-"`
	Rules []Rule           `json:"rules"`
	// Default is Accept, or Drop when a NetworkPolicy isolates the pods.
	Default    Action       `json:"default"`
	IsolatedBy []policy.Ref `json:"isolatedBy,omitempty"`
	Pods       []string     `json:"pods"`
	// DefaultAudit logs the connections that Default drops, when set.
	DefaultAudit *Audit `json:"defaultAudit,omitempty"`
	// LogOnly tables decide nothing: they walk the tiers with the staged
	// policies to log what those would do, and every path returns.
	LogOnly bool `json:"logOnly,omitempty"`
}

// Action is what a matching rule does to the connection in this direction.
type Action string

const (
	// Accept: this direction allows it (the other direction still decides).
	Accept Action = "accept"
	// Drop: denied, silently (probes expect a timeout, not a reset).
	Drop Action = "drop"
	// Pass: leave the admin tier; the NetworkPolicy tier decides.
	Pass Action = "pass"
	// EndTier: leave the baseline tier (a ClusterNetworkPolicy Pass there);
	// the default allows.
	EndTier Action = "end-tier"
)

// Rule is one 6-tuple: the local pod (implied by the table) and the peer
// address, protocol and destination port range, with an action. A rule
// matches when its peer and its ports both match.
type Rule struct {
	Tier   policy.Tier `json:"-"`
	Action Action      `json:"action"`
	// Peer names an AddrSet; empty matches any address.
	Peer string `json:"peer,omitempty"`
	// Ports are protocol/port ranges; empty matches any protocol and port.
	Ports []l4.Range `json:"-"`
	// Endpoints names an EndpointSet of peer address, protocol and port:
	// egress named ports, resolved per destination pod. When set, Peer and
	// Ports are empty.
	Endpoints string `json:"endpoints,omitempty"`
	// Domains names a DomainSet: the peer is an address that one of its
	// names resolved to (egress Allow rules only). When set, Peer is empty.
	Domains string `json:"domains,omitempty"`
	// From says which policy rule this is.
	From RuleRef `json:"from"`
	// Audit logs the connections this rule decides, when set.
	Audit *Audit `json:"audit,omitempty"`
}

// RuleRef names the policy rule a kernel rule comes from.
type RuleRef struct {
	Tier   string     `json:"tier"`
	Policy policy.Ref `json:"policy"`
	Rule   string     `json:"rule"`
}

func (r RuleRef) String() string { return r.Policy.String() + " " + r.Rule }

// AddrSet is a set of addresses (IPv4 and IPv6 together; renderers split
// them) standing for one peer selection.
type AddrSet struct {
	Name string `json:"name"`
	// Key describes the selection, for people: "pods ns=x pod=a".
	Key      string         `json:"key"`
	Prefixes []netip.Prefix `json:"prefixes"`
	// Static: the set holds ipBlocks alone, so its members change only
	// with its policies, never one pod at a time: a renderer may write
	// neighbouring prefixes as one range (the difference of a block and n
	// exceptions is n+1 ranges, but up to 128 prefixes an exception).
	Static bool `json:"static,omitempty"`
	// Hosts: the set holds pods and nodes alone, so every member is one
	// address and a renderer may keep it as a plain set, without ranges
	// (a kernel keeps each address of a range set as a range: 2.5 times
	// the memory). A set's name says which it is: Hosts sets start with
	// HostSetPrefix, the others with BlockSetPrefix, so a renderer that
	// finds a set of that name already declared finds it of the same kind.
	Hosts bool `json:"hosts,omitempty"`
}

// HostSetPrefix and BlockSetPrefix start the names of the AddrSets with
// (AddrSet.Hosts) and without single addresses only.
const (
	HostSetPrefix  = "h-"
	BlockSetPrefix = "a-"
)

// addrSetPrefix is the prefix of the name of an AddrSet.
func addrSetPrefix(hosts bool) string {
	if hosts {
		return HostSetPrefix
	}
	return BlockSetPrefix
}

// DomainSetPrefix starts the name of every DomainSet, and no other set's:
// a renderer tells by it which sets hold learned elements to keep.
const DomainSetPrefix = "d-"

// DomainSet stands for the addresses of a domainNames peer's names. Its
// elements are not the compiler's: the agent adds each address a local
// pod's DNS answer gave for a matching name, for the answer's TTL
// (policy/domains.go has what matches), so the set starts empty and a
// renderer keeps what was learned across its syncs.
type DomainSet struct {
	Name     string   `json:"name"`
	Key      string   `json:"key"`
	Patterns []string `json:"patterns"` // as written: "api.example.com", "*.example.org"
}

// EndpointSet is a set of (address, protocol, port): a named port of the
// pods of one peer.
type EndpointSet struct {
	Name     string     `json:"name"`
	Key      string     `json:"key"`
	Elements []Endpoint `json:"elements"`
}

// Endpoint is an address with a protocol and port.
type Endpoint struct {
	IP   netip.Addr `json:"ip"`
	Port l4.Port    `json:"-"`
}

// Renderer writes one node's IR in the terms of a network stack: the
// Renderer API of seeds/contiv-vpp-policy-plugin.txt, whose renderers all
// take the same per-pod rule tables, each responsible for its own stack.
// nft.Text writes the nftables ruleset (nft.Renderer programs a kernel with
// it and keeps it in step); secgroups.JSON writes Neutron security groups.
type Renderer interface {
	Render(w io.Writer, ir *IR) error
}
