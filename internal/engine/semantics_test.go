package engine_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/source"
)

// TestSemantics is DESIGN.md's "Semantics checklist", one table: each group
// is a cluster (a topology and policies) with the flows to decide in it and
// what must be decided, written from the Kubernetes NetworkPolicy and
// network-policy-api semantics (and the seeds for the KEP-2091 shape and the
// v1beta1 proposal), never computed by the engine. Traces use sideTrace's
// notation (testhelpers_test.go): "Tier KIND/[ns/]name rule Action", steps
// joined by " > ", "-" for a side decided before any tier. Every group also
// holds the matrix to Decide on every pair of its pods (checkSemFlows) and
// lists the priority-overlap warnings it must give, none unless said.
func TestSemantics(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range semantics {
		name := g.item + "/" + g.name
		if seen[name] {
			t.Errorf("%s: two groups of this name", name)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			topology := g.topology
			if topology == "" {
				topology = semTopology
			}
			text := topology
			if strings.TrimSpace(g.policies) != "" {
				text += "\n---\n" + g.policies
			}
			read := source.Options{ANPShape: source.ShapeAuto, Lenient: g.lenient}
			e := semEngineFrom(t, text, read, g.opts)
			var overlaps []string
			for _, d := range e.PriorityOverlaps() {
				overlaps = append(overlaps, d.Object+": "+d.Message)
			}
			if !slices.Equal(overlaps, g.overlaps) {
				t.Errorf("PriorityOverlaps:\n  got  %q\n  want %q", overlaps, g.overlaps)
			}
			checkSemFlows(t, e, g.flows)
		})
	}
}

// The checklist's items, as the groups name them.
const (
	itemPeers       = "NetworkPolicy peers"
	itemPolicyTypes = "policyTypes"
	itemIPBlock     = "ipBlock"
	itemPorts       = "ports"
	itemConnection  = "connection"
	itemAdminOrder  = "admin order"
	itemAdminPass   = "admin Pass"
	itemBaseline    = "baseline"
	itemCNP         = "ClusterNetworkPolicy"
	itemPriority    = "equal priorities"
	itemFailClosed  = "fail closed"
	itemAdminPeers  = "admin peers"
	itemKEPRelated  = "KEP related"
	itemSameLabels  = "KEP sameLabels"
	itemLegacy      = "legacy namespace isolation"
	itemIsolatedBy  = "isolatedBy"
)

var semantics = []semGroup{
	// NetworkPolicy: nil and empty selectors; a peer with a namespaceSelector and a podSelector is an AND.
	{item: itemPeers, name: "podSelector {} alone is every pod of the policy's namespace",
		policies: npIngressToA(v1, `[{from: [{podSelector: {}}]}]`),
		flows: []semFlow{
			{from: "x/b", to: "x/a", port: "80", allowed: true, egress: "Default Allow", ingress: npAllow},
			{from: "x/c", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: outside, to: "x/a", port: "80", allowed: false, egress: "-", ingress: npDeny},
			// x/b is not selected: not isolated.
			{from: "x/a", to: "x/b", port: "80", allowed: true, ingress: "Default Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPeers, name: "namespaceSelector {} alone is every pod of every namespace",
		policies: npIngressToA(v1, `[{from: [{namespaceSelector: {}}]}]`),
		flows: []semFlow{
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: outside, to: "x/a", port: "80", allowed: false, ingress: npDeny},
			// A node is not a pod (and n2 is not x/a's node).
			{from: "node/n2", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: npAllow},
		}},
	{item: itemPeers, name: "namespaceSelector alone is every pod of the selected namespaces",
		policies: npIngressToA(v1, `[{from: [{namespaceSelector: {matchLabels: {ns: "y"}}}]}]`),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPeers, name: "namespaceSelector on the automatic kubernetes.io/metadata.name label",
		policies: npIngressToA(v1, `[{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: "y"}}}]}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPeers, name: "podSelector alone is the policy's own namespace only",
		policies: npIngressToA(v1, `[{from: [{podSelector: {matchLabels: {app: b}}}]}]`),
		flows: []semFlow{
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "x/c", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPeers, name: "namespaceSelector and podSelector in one peer are an AND",
		policies: npIngressToA(v1, `[{from: [{namespaceSelector: {matchLabels: {ns: "y"}}, podSelector: {matchLabels: {app: b}}}]}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPeers, name: "namespaceSelector and podSelector as two peers are an OR",
		policies: npIngressToA(v1, `[{from: [{namespaceSelector: {matchLabels: {ns: "y"}}}, {podSelector: {matchLabels: {app: b}}}]}]`),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "x/c", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPeers, name: "absent from is every source; ports still apply",
		policies: npIngressToA(v1, `[{ports: [{port: 80}]}]`),
		flows: []semFlow{
			{from: outside, to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "node/n2", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "81", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "81", allowed: false, ingress: npDeny},
		}},
	{item: itemPeers, name: "networking.k8s.io/v1 from: [] is every source",
		policies: npIngressToA(v1, `[{from: []}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: outside, to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: npAllow},
		}},
	{item: itemPeers, name: "extensions/v1beta1 from: [] is no source",
		policies: npIngressToA("extensions/v1beta1", `[{from: []}]`),
		flows: []semFlow{
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: outside, to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPeers, name: "extensions/v1beta1 ports: [] is no port",
		policies: npIngressToA("extensions/v1beta1", `[{ports: []}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPeers, name: "extensions/v1beta1 absent from is every source",
		policies: npIngressToA("extensions/v1beta1", `[{ports: [{port: 80}]}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: outside, to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "81", allowed: false, ingress: npDeny},
		}},
	// NetworkPolicy: policyTypes defaulting (Ingress always; Egress iff egress rules exist).
	{item: itemPolicyTypes, name: "no policyTypes and only ingress rules: Ingress only",
		policies: npA(`  ingress: [{from: [{podSelector: {matchLabels: {app: b}}}]}]`),
		flows: []semFlow{
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/np ingress[0] Allow"},
			{from: "x/c", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "x/a", to: "x/c", port: "80", allowed: true, egress: "Default Allow"},
			{from: "x/a", to: outside, port: "80", allowed: true, egress: "Default Allow"},
		}},
	{item: itemPolicyTypes, name: "no policyTypes and egress rules: Ingress and Egress",
		policies: npA(`  egress: [{to: [{namespaceSelector: {matchLabels: {ns: "y"}}}]}]`),
		flows: []semFlow{
			{from: "x/a", to: "y/b", port: "80", allowed: true, egress: "NetworkPolicy NP/x/np egress[0] Allow"},
			{from: "x/a", to: "x/b", port: "80", allowed: false, egress: npDeny},
			// Ingress is isolated and has no rule: nothing gets in.
			{from: "x/b", to: "x/a", port: "80", allowed: false, egress: "Default Allow", ingress: npDeny},
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPolicyTypes, name: "policyTypes [Egress] without rules denies all egress and leaves ingress alone",
		policies: npA(`  policyTypes: [Egress]`),
		flows: []semFlow{
			{from: "x/a", to: "x/b", port: "80", allowed: false, egress: npDeny},
			{from: "x/a", to: outside, port: "80", allowed: false, egress: npDeny},
			{from: "x/a", to: "node/n2", port: "80", allowed: false, egress: npDeny},
			{from: "x/a", to: "y/a", port: "53/udp", allowed: false, egress: npDeny},
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: "Default Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Default Allow"},
			{from: "x/a", to: "y/a", port: "80", allowed: false, egress: npDeny},
		}},
	{item: itemPolicyTypes, name: "policyTypes [Ingress] with egress rules: egress is not isolated",
		policies: npA(`  policyTypes: [Ingress]
  egress: [{to: [{podSelector: {matchLabels: {app: b}}}]}]`),
		flows: []semFlow{
			{from: "x/a", to: "x/c", port: "80", allowed: true, egress: "Default Allow"},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPolicyTypes, name: "policyTypes [Ingress, Egress] without rules isolates both ways",
		policies: npA(`  policyTypes: [Ingress, Egress]`),
		flows: []semFlow{
			{from: "x/a", to: "x/c", port: "80", allowed: false, egress: npDeny},
			{from: "x/c", to: "x/a", port: "80", allowed: false, egress: "Default Allow", ingress: npDeny},
			{from: "x/c", to: "x/b", port: "80", allowed: true},
		}},
	{item: itemPolicyTypes, name: "an empty spec isolates ingress of every pod of the namespace",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec: {podSelector: {}}
`,
		flows: []semFlow{
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/c", port: "80", allowed: false, ingress: npDeny},
			{from: "x/a", to: "y/a", port: "80", allowed: true, egress: "Default Allow", ingress: "Default Allow"},
		}},
	{item: itemPolicyTypes, name: "no policyTypes and no rules: Ingress only",
		policies: npA(""),
		flows: []semFlow{
			{from: "x/a", to: "y/a", port: "80", allowed: true, egress: "Default Allow", ingress: "Default Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPolicyTypes, name: "no policyTypes and egress rules to a pod: Ingress and Egress",
		policies: npA(`  egress: [{to: [{podSelector: {matchLabels: {app: b}}}]}]`),
		flows: []semFlow{
			{from: "x/a", to: "x/b", port: "8080", allowed: true, egress: "NetworkPolicy NP/x/np egress[0] Allow", ingress: "Default Allow"},
			{from: "x/a", to: "y/a", port: "80", allowed: false, egress: npDeny},
			{from: "y/a", to: "x/a", port: "80", allowed: false, egress: "Default Allow", ingress: npDeny},
		}},
	// NetworkPolicy: ipBlock with except, in IPv4 and IPv6; it matches addresses, pods' included, of its own family only.
	{item: itemIPBlock, name: "ipBlock with except: inside, inside the exception, outside; pod IPs included",
		policies: npIngressToA(v1, `[{from: [{ipBlock: {cidr: 198.18.0.0/16, except: [198.18.2.0/24]}}]}]`),
		flows: []semFlow{
			{from: outside, to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "198.18.2.200", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "198.19.0.9", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			// Pods by their IPs: x/b is 198.18.1.2 (inside), y/a is
			// 198.18.2.1 (in the exception).
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "198.18.1.2", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "198.18.9.9", to: "x/a", port: "80", allowed: true, ingress: npAllow},
		}},
	{item: itemIPBlock, name: "ipBlock /32 of one pod's IP selects that pod",
		policies: npIngressToA(v1, `[{from: [{ipBlock: {cidr: 198.18.2.2/32}}]}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "198.18.2.2", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemIPBlock, name: "egress ipBlock with except matches destination pod IPs",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  policyTypes: [Egress]
  egress: [{to: [{ipBlock: {cidr: 198.18.2.0/24, except: [198.18.2.2/32]}}]}]
`,
		flows: []semFlow{
			{from: "x/a", to: "y/a", port: "80", allowed: true, egress: "NetworkPolicy NP/x/np egress[0] Allow", ingress: "Default Allow"},
			{from: "x/a", to: "198.18.2.77", port: "80", allowed: true, egress: "NetworkPolicy NP/x/np egress[0] Allow", ingress: "-"},
			{from: "x/a", to: "y/b", port: "80", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/x/np"},
			{from: "x/a", to: "x/b", port: "80", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/x/np"},
			// x/host carries app=a but is host-network: not a subject.
			{from: "x/host", to: "x/b", port: "80", allowed: true, egress: "-"},
		}},
	{item: itemIPBlock, topology: dualStack, name: "IPv6 ipBlock with except",
		policies: npIngressToA(v1, `[{from: [{ipBlock: {cidr: "fd00:198:18::/48", except: ["fd00:198:18:2::/64"]}}]}]`),
		flows: []semFlow{
			{from: "fd00:198:18:1::9", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "fd00:198:18:2::9", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "fd00:99::1", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			// x/b by its IPv6 address is inside, by its IPv4 address not.
			{from: "fd00:198:18:1::2", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "198.18.1.2", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			// x/c (IPv6 only) is in the exception.
			{from: "x/c", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "fd00:198:18:2::3", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemIPBlock, topology: dualStack, name: "an IPv4 block matches no IPv6 address",
		policies: npIngressToA(v1, `[{from: [{ipBlock: {cidr: 0.0.0.0/0}}]}]`),
		flows: []semFlow{
			{from: "198.18.200.1", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "fd00:99::1", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "x/c", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "fd00:198:18:1::2", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemIPBlock, topology: dualStack, name: "an IPv4 block matches a dual-stack pod on its IPv4 address only",
		policies: npIngressToA(v1, `[{from: [{ipBlock: {cidr: 198.18.1.0/24}}]}]`),
		flows: []semFlow{
			// Two dual-stack pods talk over IPv4.
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "198.18.1.2", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			// x/b by its IPv6 address, and x/c, which has only one.
			{from: "fd00:198:18:1::2", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "x/c", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemIPBlock, topology: dualStack, name: "an IPv4 and an IPv6 block match a dual-stack pod on either address",
		policies: npIngressToA(v1, `[{from: [{ipBlock: {cidr: 198.18.1.0/24}}, {ipBlock: {cidr: "fd00:198:18:1::/64"}}]}]`),
		flows: []semFlow{
			{from: "198.18.1.2", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "fd00:198:18:1::2", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "x/c", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "198.18.2.9", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "fd00:198:18:2::9", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemIPBlock, topology: dualStack, name: "an IPv6 except of one pod's /128",
		policies: npIngressToA(v1, `[{from: [{ipBlock: {cidr: "fd00:198:18::/48", except: ["fd00:198:18:1::2/128"]}}]}]`),
		flows: []semFlow{
			{from: "fd00:198:18:1::2", to: "x/a", port: "80", allowed: false, ingress: npDeny},
			{from: "fd00:198:18:1::3", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "x/c", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			// Over IPv4 an IPv6 block matches nothing.
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemIPBlock, topology: dualStack, name: "an egress IPv6 block with except matches destination pods on their IPv6 addresses",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  policyTypes: [Egress]
  egress: [{to: [{ipBlock: {cidr: "fd00:198:18::/48", except: ["fd00:198:18:2::/64"]}}]}]
`,
		flows: []semFlow{
			{from: "fd00:198:18:1::1", to: "fd00:198:18:1::2", port: "80", allowed: true, egress: "NetworkPolicy NP/x/np egress[0] Allow", ingress: "Default Allow"},
			{from: "198.18.1.1", to: "198.18.1.2", port: "80", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/x/np"},
			{from: "x/a", to: "x/c", port: "80", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/x/np"},
			{from: "x/a", to: "fd00:198:18:1::99", port: "80", allowed: true, egress: "NetworkPolicy NP/x/np egress[0] Allow", ingress: "-"},
			{from: "x/a", to: "fd00:99::1", port: "80", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/x/np"},
		}},
	// NetworkPolicy: named ports resolved against the destination pod, per protocol; endPort; TCP, UDP, SCTP (TCP by default).
	{item: itemPorts, name: "endPort is an inclusive range",
		policies: npIngressToA(v1, `[{ports: [{port: 8000, endPort: 8010}]}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "7999", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "8000", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "8005", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "8010", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "8011", allowed: false, ingress: npDeny},
			// The range is TCP (the default protocol).
			{from: "y/b", to: "x/a", port: "8005/udp", allowed: false, ingress: npDeny},
		}},
	{item: itemPorts, name: "TCP UDP SCTP, TCP by default",
		policies: npIngressToA(v1, `[{ports: [{port: 80}, {port: 53, protocol: UDP}, {port: 9000, protocol: SCTP}, {port: 9001, protocol: TCP}]}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80/tcp", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "80/udp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "80/sctp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "53/udp", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "53/tcp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "9000/sctp", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "9000/tcp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "9000/udp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "9001/tcp", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "9001/sctp", allowed: false, ingress: npDeny},
		}},
	{item: itemPorts, name: "a protocol without a port is every port of that protocol",
		policies: npIngressToA(v1, `[{ports: [{protocol: UDP}]}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "1/udp", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "65535/udp", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "80/tcp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "80/sctp", allowed: false, ingress: npDeny},
		}},
	{item: itemPorts, name: "a named port resolves per destination pod",
		policies: npPortsX(`[{port: http}]`),
		flows: []semFlow{
			// x/a: http=80, x/b: http=8080, x/c: no http.
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "8080", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "80/udp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/b", port: "8080", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/b", port: "80", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/c", port: "80", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/c", port: "8080", allowed: false, ingress: npDeny},
			// The flow's own port given by name.
			{from: "y/b", to: "x/a", port: "http", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/b", port: "http", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "8080", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/b", port: "8080", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/b", port: "80", allowed: false, ingress: npDeny},
		}},
	{item: itemPorts, name: "a named port with protocol UDP does not match a TCP container port of that name",
		policies: npPortsX(`[{port: dns, protocol: UDP}]`),
		flows: []semFlow{
			// x/a: dns=53/UDP, x/b: dns=5353/TCP.
			{from: "y/b", to: "x/a", port: "53/udp", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/a", port: "53/tcp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/b", port: "5353/tcp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/b", port: "5353/udp", allowed: false, ingress: npDeny},
		}},
	{item: itemPorts, name: "a named port with the default TCP does not match a UDP container port of that name",
		policies: npPortsX(`[{port: dns}]`),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "53/udp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/a", port: "53/tcp", allowed: false, ingress: npDeny},
			{from: "y/b", to: "x/b", port: "5353/tcp", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/b", port: "dns", allowed: true, ingress: npAllow},
			{from: "y/b", to: "x/b", port: "5353/udp", allowed: false, ingress: npDeny},
		}},
	{item: itemPorts, name: "an egress named port resolves against the destination, not the subject",
		// y/b declares no ports at all.
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: "y"}
spec:
  podSelector: {matchLabels: {app: b}}
  policyTypes: [Egress]
  egress: [{ports: [{port: http}]}]
`,
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, egress: "NetworkPolicy NP/y/np egress[0] Allow"},
			{from: "y/b", to: "x/b", port: "8080", allowed: true, egress: "NetworkPolicy NP/y/np egress[0] Allow"},
			{from: "y/b", to: "x/b", port: "80", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/y/np"},
			{from: "y/b", to: "x/a", port: "8080", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/y/np"},
			// No destination pod, nothing to resolve the name against.
			{from: "y/b", to: outside, port: "80", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/y/np"},
		}},
	{item: itemPorts, name: "a named port with protocol TCP does not match a UDP container port of that name",
		policies: npPortsX(`[{port: dns, protocol: TCP}]`),
		flows: []semFlow{
			// x/a: dns=53/UDP, x/b: dns=5353/TCP.
			{from: "y/a", to: "x/a", port: "53/udp", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/a", port: "53/tcp", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/b", port: "5353/tcp", allowed: true, ingress: npAllow},
		}},
	{item: itemPorts, name: "endPort is an inclusive range, for every pod of the namespace",
		policies: npPortsX(`[{port: 8000, endPort: 8010}]`),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "7999", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/a", port: "8000", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "8010", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "8011", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/a", port: "8005/udp", allowed: false, ingress: npDeny},
		}},
	{item: itemPorts, name: "TCP by default; UDP and SCTP are other protocols",
		policies: npPortsX(`[{port: 80}, {port: 90, protocol: SCTP}]`),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80/tcp", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "80/udp", allowed: false, ingress: npDeny},
			{from: "y/a", to: "x/a", port: "90/sctp", allowed: true, ingress: npAllow},
			{from: "y/a", to: "x/a", port: "90/tcp", allowed: false, ingress: npDeny},
		}},
	// Connections: a pod reaches itself; its own node reaches it; host-network pods are never subjects or pod peers.
	{item: itemConnection, name: "a pod reaches itself even when isolated both ways",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress, Egress]}
`,
		flows: []semFlow{
			{from: "x/a", to: "x/a", port: "80", allowed: true, egress: "-", ingress: "-"},
			{from: "x/a", to: "198.18.1.1", port: "80", allowed: true, egress: "-", ingress: "-"},
			{from: "x/c", to: "x/c", port: "9999/udp", allowed: true},
			{from: "x/a", to: "x/b", port: "80", allowed: false, egress: deniedByDenyAll},
			{from: "x/b", to: "x/a", port: "80", allowed: false, egress: deniedByDenyAll, ingress: deniedByDenyAll},
		}},
	{item: itemConnection, name: "a pod reaches itself even under an admin Deny",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-everything}
spec:
  priority: 1
  subject: {namespaces: {}}
  ingress: [{name: in, action: Deny, from: [{namespaces: {}}]}]
  egress: [{name: out, action: Deny, to: [{networks: [0.0.0.0/0]}]}]
`,
		flows: []semFlow{
			{from: "x/a", to: "x/a", port: "80", allowed: true},
			{from: "y/b", to: "y/b", port: "80", allowed: true},
			{from: "x/a", to: "x/b", port: "80", allowed: false, egress: "Admin ANP/deny-everything out Deny"},
		}},
	{item: itemConnection, name: "ingress from the pod's own node is allowed, from another node is not",
		policies: denyAllIngressX,
		flows: []semFlow{
			// x/a runs on n1, x/b on n2.
			{from: "node/n1", to: "x/a", port: "80", allowed: true, egress: "-", ingress: "-"},
			{from: "198.19.255.1", to: "x/a", port: "80", allowed: true, ingress: "-"},
			{from: "x/host", to: "x/a", port: "80", allowed: true, ingress: "-"},
			{from: "node/n2", to: "x/a", port: "80", allowed: false, ingress: deniedByDenyAll},
			{from: "198.19.255.2", to: "x/a", port: "80", allowed: false, ingress: deniedByDenyAll},
			{from: "node/n1", to: "x/b", port: "80", allowed: false, ingress: deniedByDenyAll},
			{from: "x/host", to: "x/b", port: "80", allowed: false, ingress: deniedByDenyAll},
			// A pod on the same node is not the node.
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: deniedByDenyAll},
		}},
	{item: itemConnection, name: "host-network pods are never NetworkPolicy subjects",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress, Egress]}
`,
		flows: []semFlow{
			{from: "y/a", to: "x/host", port: "80", allowed: true, ingress: "-"},
			{from: "x/host", to: "y/a", port: "80", allowed: true, egress: "-"},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: deniedByDenyAll},
			// The pod's own node, and x/host on it, reach x/a (both on n1) although
			// x/a's egress is isolated too; n2 and x/b (on n2) do not.
			{from: "node/n1", to: "x/a", port: "80", allowed: true, egress: "-", ingress: "-"},
			{from: "x/host", to: "x/a", port: "80", allowed: true, egress: "-", ingress: "-"},
			{from: "node/n2", to: "x/a", port: "80", allowed: false, ingress: deniedByDenyAll},
			{from: "x/host", to: "x/b", port: "8080", allowed: false, egress: "-", ingress: deniedByDenyAll},
			{from: "x/b", to: "x/host", port: "80", allowed: false, egress: deniedByDenyAll, ingress: "-"},
		}},
	{item: itemConnection, name: "host-network pods are never AdminNetworkPolicy subjects",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-to-a}
spec:
  priority: 1
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: a}}}}
  ingress: [{name: in, action: Deny, from: [{namespaces: {}}]}]
`,
		flows: []semFlow{
			{from: "y/b", to: "x/host", port: "80", allowed: true, ingress: "-"},
			{from: "x/b", to: "x/host", port: "80", allowed: true, ingress: "-"},
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/deny-to-a in Deny"},
			{from: "x/b", to: "y/a", port: "80", allowed: false, ingress: "Admin ANP/deny-to-a in Deny"},
		}},
	{item: itemConnection, name: "host-network pods are never pod peers (podSelector)",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec:
  podSelector: {matchLabels: {app: b}}
  ingress: [{from: [{podSelector: {matchLabels: {app: a}}}]}]
`,
		flows: []semFlow{
			{from: "x/a", to: "x/b", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/np ingress[0] Allow"},
			// x/host has app=a, runs on n1; x/b runs on n2.
			{from: "x/host", to: "x/b", port: "80", allowed: false, egress: "-", ingress: "NetworkPolicy Deny isolatedBy=NP/x/np"},
		}},
	{item: itemConnection, name: "host-network pods are never pod peers (namespaceSelector)",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec:
  podSelector: {matchLabels: {app: b}}
  ingress: [{from: [{namespaceSelector: {}, podSelector: {}}]}]
`,
		flows: []semFlow{
			{from: "y/b", to: "x/b", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/np ingress[0] Allow"},
			{from: "x/host", to: "x/b", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/np"},
		}},
	{item: itemConnection, name: "host-network pods match ipBlock by their address",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec:
  podSelector: {matchLabels: {app: b}}
  ingress: [{from: [{ipBlock: {cidr: 198.19.255.0/24}}]}]
`,
		flows: []semFlow{
			{from: "x/host", to: "x/b", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/np ingress[0] Allow"},
			{from: "node/n1", to: "x/b", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/np ingress[0] Allow"},
			{from: "x/a", to: "x/b", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/np"},
		}},
	{item: itemConnection, name: "host-network pods are not egress pod peers",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  policyTypes: [Egress]
  egress: [{to: [{namespaceSelector: {}}]}]
`,
		flows: []semFlow{
			{from: "x/a", to: "y/b", port: "80", allowed: true, egress: "NetworkPolicy NP/x/np egress[0] Allow"},
			{from: "x/a", to: "x/host", port: "80", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/x/np"},
		}},
	{item: itemConnection, name: "host-network pods are not admin pod peers",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-from-a}
spec:
  priority: 1
  subject: {pods: {namespaceSelector: {matchLabels: {ns: x}}, podSelector: {matchLabels: {app: b}}}}
  ingress: [{name: from-a, action: Deny, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: a}}}}]}]
`,
		flows: []semFlow{
			{from: "x/a", to: "x/b", port: "80", allowed: false, ingress: "Admin ANP/deny-from-a from-a Deny"},
			{from: "x/host", to: "x/b", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemConnection, name: "host-network pods are never pod peers (namespaceSelector alone)",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: "y"}
spec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {}}]}]}
`,
		flows: []semFlow{
			{from: "x/b", to: "y/a", port: "80", allowed: true, ingress: "NetworkPolicy NP/y/np ingress[0] Allow"},
			// x/host runs on n1, y/a on n2: not its node.
			{from: "x/host", to: "y/a", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/y/np"},
		}},
	// Admin tier: no implicit isolation; rules in written order; priorities.
	{item: itemAdminOrder, name: "rules in written order, first match wins",
		policies: anpX("ordered", "10", ruleAllowB+ruleDenyY+ruleAllowAll),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: "Admin ANP/ordered allow-b Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/ordered deny-y Deny"},
			{from: "x/c", to: "x/a", port: "80", allowed: true, ingress: "Admin ANP/ordered allow-all Allow"},
			// No implicit isolation: nothing matches an outside source.
			{from: outside, to: "x/a", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemAdminOrder, name: "the same rules, deny written first",
		policies: anpX("ordered", "10", ruleDenyY+ruleAllowB+ruleAllowAll),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/ordered deny-y Deny"},
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: "Admin ANP/ordered allow-b Allow"},
		}},
	{item: itemAdminOrder, name: "lower priority number first, whatever the names (deny at 5)",
		policies: anpX("aaa", "50", ruleAllowAll) + "---\n" + anpX("zzz", "5", ruleDenyB),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/zzz deny-b Deny"},
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Admin ANP/aaa allow-all Allow"},
		}},
	{item: itemAdminOrder, name: "lower priority number first, whatever the names (allow at 5)",
		policies: anpX("aaa", "5", ruleAllowAll) + "---\n" + anpX("zzz", "50", ruleDenyB),
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: "Admin ANP/aaa allow-all Allow"},
		}},
	{item: itemAdminOrder, name: "an admin Allow overrides NetworkPolicy isolation",
		policies: anpX("allow-y", "10", `  - {name: allow-y, action: Allow, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
`) + "---\n" + denyAllIngressX,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Admin ANP/allow-y allow-y Allow"},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/deny-all"},
		}},
	{item: itemAdminOrder, name: "an admin Deny overrides a NetworkPolicy allow",
		policies: anpX("deny-y", "10", ruleDenyY) + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all, namespace: x}
spec: {podSelector: {}, ingress: [{}]}
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/deny-y deny-y Deny"},
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/allow-all ingress[0] Allow"},
		}},
	// Admin tier: Pass goes on to the NetworkPolicy tier.
	{item: itemAdminPass, name: "Pass skips the lower admin deny; nothing below: default allow",
		policies: passAndDeny,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: passY + " > Default Allow"},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/deny-all deny-all Deny"},
		}},
	{item: itemAdminPass, name: "Pass goes to the NetworkPolicy tier, which decides",
		policies: passAndDeny + "---\n" + allowBToA,
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: passY + " > NetworkPolicy NP/x/allow-b ingress[0] Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: passY + " > NetworkPolicy Deny isolatedBy=NP/x/allow-b"},
			// Not passed (x is not y): the lower admin deny decides before the NP could allow.
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/deny-all deny-all Deny"},
			// x/c is selected by no NetworkPolicy.
			{from: "y/a", to: "x/c", port: "80", allowed: true, ingress: passY + " > Default Allow"},
		}},
	{item: itemAdminPass, name: "Pass with no NetworkPolicy selecting the pod goes on to the baseline",
		policies: passAndDeny + "---\n" + banpDenyAll,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: passY + " > Baseline BANP/default deny-all Deny"},
			{from: "y/a", to: "y/b", port: "80", allowed: false, ingress: "Baseline BANP/default deny-all Deny"},
		}},
	{item: itemAdminPass, name: "Pass with a NetworkPolicy isolating only the other direction goes on to the baseline",
		policies: passAndDeny + "---\n" + banpDenyAll + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-all, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  policyTypes: [Egress]
  egress: [{}]
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: passY + " > Baseline BANP/default deny-all Deny"},
		}},
	{item: itemAdminPass, name: "Pass, NetworkPolicy and baseline together",
		policies: passAndDeny + "---\n" + allowBToA + "---\n" + banpDenyAll,
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: passY + " > NetworkPolicy NP/x/allow-b ingress[0] Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: passY + " > NetworkPolicy Deny isolatedBy=NP/x/allow-b"},
			{from: "y/a", to: "x/c", port: "80", allowed: false, ingress: passY + " > Baseline BANP/default deny-all Deny"},
		}},
	{item: itemAdminPass, name: "a Pass of one port skips the rest of the admin tier for that port only",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: first}
spec:
  priority: 5
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - {name: pass-y-80, action: Pass, from: [{namespaces: {matchLabels: {ns: "y"}}}], ports: [{portNumber: {protocol: TCP, port: 80}}]}
  - {name: deny-y, action: Deny, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: second}
spec:
  priority: 6
  subject: {namespaces: {}}
  ingress:
  - {name: allow-y, action: Allow, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-only-from-x, namespace: x}
spec: {podSelector: {matchLabels: {app: b}}, ingress: [{from: [{podSelector: {}}]}]}
` + "---\n" + banpDenyAll,
		flows: []semFlow{
			// Pass skips the lower admin rules ("second" would allow); no
			// NetworkPolicy isolates x/a: the baseline decides.
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/first pass-y-80 Pass > Baseline BANP/default deny-all Deny"},
			// Pass, then the NetworkPolicy that isolates x/b decides: y is not x.
			{from: "y/a", to: "x/b", port: "80", allowed: false, ingress: "Admin ANP/first pass-y-80 Pass > NetworkPolicy Deny isolatedBy=NP/x/b-only-from-x"},
			// Another port is not passed: deny-y decides before "second".
			{from: "y/a", to: "x/a", port: "81", allowed: false, ingress: "Admin ANP/first deny-y Deny"},
			// "first" does not select y/a and "second" allows only from y.
			{from: "x/a", to: "y/a", port: "80", allowed: false, egress: "Default Allow", ingress: "Baseline BANP/default deny-all Deny"},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: "Baseline BANP/default deny-all Deny"},
		}},
	// Baseline tier: reached only where no NetworkPolicy isolates the pod.
	{item: itemBaseline, name: "the baseline denies what no NetworkPolicy isolates",
		policies: banpX(ruleDenyAll),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, egress: "Default Allow", ingress: banpDenied},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: banpDenied},
			{from: "x/a", to: "y/a", port: "80", allowed: true, ingress: "Default Allow"},
			{from: outside, to: "x/a", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemBaseline, name: "a NetworkPolicy that isolates the pod decides; the baseline is not reached",
		policies: banpX(ruleDenyAll) + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-y, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {ns: "y"}}}]}]
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/allow-y ingress[0] Allow"},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/allow-y"},
			{from: "y/a", to: "x/b", port: "80", allowed: false, ingress: banpDenied},
		}},
	{item: itemBaseline, name: "an egress-only NetworkPolicy leaves ingress to the baseline",
		policies: banpX(ruleDenyAll) + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-all, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  policyTypes: [Egress]
  egress: [{}]
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: banpDenied},
			{from: "x/a", to: "y/a", port: "80", allowed: true, egress: "NetworkPolicy NP/x/egress-all egress[0] Allow"},
		}},
	{item: itemBaseline, name: "a baseline Allow does not override NetworkPolicy isolation",
		policies: banpX(`  - {name: allow-all, action: Allow, from: [{namespaces: {}}]}
`) + "---\n" + denyAllIngressX,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/deny-all"},
		}},
	{item: itemBaseline, name: "baseline rules in written order",
		policies: banpX(`  - {name: allow-y, action: Allow, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
` + ruleDenyAll),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Baseline BANP/default allow-y Allow"},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: banpDenied},
		}},
	// ClusterNetworkPolicy: Accept, protocols, Pass in either tier (in Baseline it ends the tier).
	{item: itemCNP, name: "Accept in the Admin tier, spelled Accept in the trace",
		policies: cnpX("accept-y", "Admin", "10", `  - name: accept-y
    action: Accept
    from: [{namespaces: {matchLabels: {ns: "y"}}}]
    protocols: [{tcp: {destinationPort: {number: 80}}}]
`) + "---\n" + denyAllIngressX,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Admin CNP/accept-y accept-y Accept"},
			{from: "y/a", to: "x/a", port: "81", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/deny-all"},
			{from: "y/a", to: "x/a", port: "80/udp", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/deny-all"},
		}},
	{item: itemCNP, name: "protocols: udp range, sctp number, destinationNamedPort",
		policies: cnpX("deny-ports", "Admin", "10", `  - name: deny-ports
    action: Deny
    from: [{namespaces: {matchLabels: {ns: "y"}}}]
    protocols:
    - udp: {destinationPort: {range: {start: 5000, end: 5010}}}
    - sctp: {destinationPort: {number: 9000}}
    - destinationNamedPort: http
`),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "4999/udp", allowed: true, ingress: "Default Allow"},
			{from: "y/a", to: "x/a", port: "5000/udp", allowed: false, ingress: "Admin CNP/deny-ports deny-ports Deny"},
			{from: "y/a", to: "x/a", port: "5010/udp", allowed: false, ingress: "Admin CNP/deny-ports deny-ports Deny"},
			{from: "y/a", to: "x/a", port: "5011/udp", allowed: true},
			{from: "y/a", to: "x/a", port: "5005/tcp", allowed: true},
			{from: "y/a", to: "x/a", port: "9000/sctp", allowed: false},
			{from: "y/a", to: "x/a", port: "9000/tcp", allowed: true},
			// http is 80/TCP on x/a and 8080/TCP on x/b.
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin CNP/deny-ports deny-ports Deny"},
			{from: "y/a", to: "x/a", port: "80/udp", allowed: true},
			{from: "y/a", to: "x/b", port: "8080", allowed: false},
			{from: "y/a", to: "x/b", port: "80", allowed: true},
		}},
	{item: itemCNP, name: "Pass in the Admin tier goes to the NetworkPolicy tier",
		policies: cnpX("pass-y", "Admin", "10", `  - {name: pass-y, action: Pass, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
`) + "---\n" + cnpX("deny-all", "Admin", "20", `  - {name: deny-all, action: Deny, from: [{namespaces: {}}]}
`) + "---\n" + allowBToA,
		flows: []semFlow{
			{from: "y/b", to: "x/a", port: "80", allowed: true, ingress: "Admin CNP/pass-y pass-y Pass > NetworkPolicy NP/x/allow-b ingress[0] Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin CNP/pass-y pass-y Pass > NetworkPolicy Deny isolatedBy=NP/x/allow-b"},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: "Admin CNP/deny-all deny-all Deny"},
		}},
	{item: itemCNP, name: "Pass in the Baseline tier ends the tier: default allow",
		policies: cnpX("b-pass", "Baseline", "10", `  - {name: pass-y, action: Pass, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
`) + "---\n" + cnpX("b-deny", "Baseline", "20", `  - {name: deny-all, action: Deny, from: [{namespaces: {}}]}
`) + "---\n" + banpDenyAll,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Baseline CNP/b-pass pass-y Pass > Default Allow"},
			{from: "x/b", to: "x/a", port: "80", allowed: false, ingress: "Baseline CNP/b-deny deny-all Deny"},
			// y is not a subject of the CNPs; the BANP selects every namespace.
			{from: "x/b", to: "y/a", port: "80", allowed: false, ingress: "Baseline BANP/default deny-all Deny"},
		}},
	{item: itemCNP, name: "Accept in the Baseline tier",
		policies: cnpX("b-accept", "Baseline", "10", `  - {name: accept-y, action: Accept, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
`) + "---\n" + cnpX("b-deny", "Baseline", "20", `  - {name: deny-all, action: Deny, from: [{namespaces: {}}]}
`),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Baseline CNP/b-accept accept-y Accept"},
			{from: "x/c", to: "x/a", port: "80", allowed: false, ingress: "Baseline CNP/b-deny deny-all Deny"},
		}},
	{item: itemCNP, name: "an Admin Accept of a UDP range, a Baseline Pass ending the tier, Baseline denies of nodes and networks",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: admin}
spec:
  tier: Admin
  priority: 1
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - {name: accept-udp, action: Accept, from: [{namespaces: {}}], protocols: [{udp: {destinationPort: {range: {start: 50, end: 60}}}}]}
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: base-pass}
spec:
  tier: Baseline
  priority: 1
  subject: {namespaces: {}}
  ingress:
  - {name: pass-y, action: Pass, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: base-deny}
spec:
  tier: Baseline
  priority: 2
  subject: {namespaces: {}}
  ingress:
  - {name: deny, action: Deny, from: [{namespaces: {}}]}
  egress:
  - {name: deny-nodes, action: Deny, to: [{nodes: {matchLabels: {zone: b}}}]}
  - {name: deny-net, action: Deny, to: [{networks: [198.18.2.0/24]}]}
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "53/udp", allowed: true, egress: "Default Allow", ingress: "Admin CNP/admin accept-udp Accept"},
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Baseline CNP/base-pass pass-y Pass > Default Allow"},
			{from: "x/b", to: "x/a", port: "80", allowed: false, egress: "Default Allow", ingress: "Baseline CNP/base-deny deny Deny"},
			{from: "x/a", to: "node/n2", port: "80", allowed: false, egress: "Baseline CNP/base-deny deny-nodes Deny"},
			{from: "x/a", to: "node/n1", port: "80", allowed: true, egress: "Default Allow", ingress: "-"},
			// networks match pod IPs: y/a is 198.18.2.1.
			{from: "x/b", to: "y/a", port: "80", allowed: false, egress: "Baseline CNP/base-deny deny-net Deny"},
		}},
	// Equal priorities: undefined upstream; a documented, stable order (kind, then name) and a warning.
	{item: itemPriority, name: "ANP and CNP at one priority: warn, ANP first although its name sorts last",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: zzz}
spec:
  priority: 7
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: deny, action: Deny, from: [{namespaces: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: aaa}
spec:
  tier: Admin
  priority: 7
  subject: {namespaces: {}}
  ingress: [{name: accept, action: Accept, from: [{namespaces: {}}]}]
`,
		overlaps: []string{"ClusterNetworkPolicy aaa: same priority (7) as AdminNetworkPolicy zzz, and both have ingress rules for pod x/a: the API leaves their order undefined; netpol evaluates AdminNetworkPolicy zzz first (by kind, then name)"},
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/zzz deny Deny"},
			{from: "x/a", to: "y/b", port: "80", allowed: true, ingress: "Admin CNP/aaa accept Accept"},
		}},
	{item: itemPriority, name: "two ANPs at one priority: warn, by name",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: beta}
spec:
  priority: 7
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: deny, action: Deny, from: [{namespaces: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: alpha}
spec:
  priority: 7
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: allow, action: Allow, from: [{namespaces: {}}]}]
`,
		overlaps: []string{"AdminNetworkPolicy beta: same priority (7) as AdminNetworkPolicy alpha, and both have ingress rules for pod x/a: the API leaves their order undefined; netpol evaluates AdminNetworkPolicy alpha first (by kind, then name)"},
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Admin ANP/alpha allow Allow"},
		}},
	{item: itemPriority, name: "two Baseline-tier CNPs at one priority: also undefined upstream, warn, by name",
		// v1alpha2: "If two (or more) policies in the same tier with the
		// same priority could match a connection, then the implementation
		// can apply any of the matching policies".
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: b-zzz}
spec:
  tier: Baseline
  priority: 5
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: deny, action: Deny, from: [{namespaces: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: b-aaa}
spec:
  tier: Baseline
  priority: 5
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: accept, action: Accept, from: [{namespaces: {}}]}]
`,
		overlaps: []string{"ClusterNetworkPolicy b-zzz: same priority (5) as ClusterNetworkPolicy b-aaa, and both have ingress rules for pod x/a: the API leaves their order undefined; netpol evaluates ClusterNetworkPolicy b-aaa first (by kind, then name)"},
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Baseline CNP/b-aaa accept Accept"},
		}},
	{item: itemPriority, name: "one priority, disjoint subjects: no warning",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: beta}
spec:
  priority: 7
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: deny, action: Deny, from: [{namespaces: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: alpha}
spec:
  priority: 7
  subject: {namespaces: {matchLabels: {ns: "y"}}}
  ingress: [{name: allow, action: Allow, from: [{namespaces: {}}]}]
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/beta deny Deny"},
			{from: "x/a", to: "y/a", port: "80", allowed: true, ingress: "Admin ANP/alpha allow Allow"},
		}},
	{item: itemPriority, name: "overlapping subjects, different priorities: no warning",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: beta}
spec:
  priority: 6
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: deny, action: Deny, from: [{namespaces: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: alpha}
spec:
  priority: 7
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: allow, action: Allow, from: [{namespaces: {}}]}]
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/beta deny Deny"},
		}},
	{item: itemPriority, name: "a CNP written before an ANP of its priority: warn, the ANP still first",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: aaa}
spec:
  tier: Admin
  priority: 7
  subject: {namespaces: {}}
  ingress: [{action: Accept, from: [{namespaces: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: zzz}
spec:
  priority: 7
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: deny, action: Deny, from: [{namespaces: {}}]}]
`,
		overlaps: []string{"ClusterNetworkPolicy aaa: same priority (7) as AdminNetworkPolicy zzz, and both have ingress rules for pod x/a: the API leaves their order undefined; netpol evaluates AdminNetworkPolicy zzz first (by kind, then name)"},
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/zzz deny Deny"},
			{from: "x/a", to: "y/a", port: "80", allowed: true, ingress: "Admin CNP/aaa ingress[0] Accept"},
		}},
	// A peer with no field netpol knows fails closed: Allow matches nothing, Deny and Pass match everything.
	{item: itemFailClosed, name: "Allow matches nothing: the lower deny applies",
		lenient: true,
		policies: futureEgressOfA("Allow") + `---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-y}
spec:
  priority: 2
  subject: {namespaces: {matchLabels: {ns: x}}}
  egress: [{name: deny-y, action: Deny, to: [{namespaces: {matchLabels: {ns: "y"}}}]}]
`,
		flows: []semFlow{
			{from: "x/a", to: "y/a", port: "80", allowed: false, egress: "Admin ANP/deny-y deny-y Deny"},
			{from: "x/a", to: "x/b", port: "80", allowed: true, egress: "Default Allow"},
			{from: "x/a", to: outside, port: "80", allowed: true, egress: "Default Allow"},
		}},
	{item: itemFailClosed, name: "Deny denies everything",
		lenient:  true,
		policies: futureEgressOfA("Deny"),
		flows: []semFlow{
			{from: "x/a", to: "y/a", port: "80", allowed: false, egress: futureDenied},
			{from: "x/a", to: "x/b", port: "80", allowed: false, egress: futureDenied},
			{from: "x/a", to: outside, port: "53/udp", allowed: false, egress: futureDenied},
			{from: "x/a", to: "node/n2", port: "80", allowed: false, egress: futureDenied},
			{from: "x/b", to: "y/a", port: "80", allowed: true, egress: "Default Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemFailClosed, name: "Pass denies everything, even where a NetworkPolicy would allow",
		lenient: true,
		policies: futureEgressOfA("Pass") + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-all, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  policyTypes: [Egress]
  egress: [{}]
`,
		flows: []semFlow{
			{from: "x/a", to: "y/a", port: "80", allowed: false, egress: futureDenied},
			{from: "x/a", to: outside, port: "80", allowed: false, egress: futureDenied},
			{from: "y/a", to: "x/a", port: "80", allowed: true},
		}},
	{item: itemFailClosed, name: "a ClusterNetworkPolicy ingress peer with only a field ingress peers lack fails closed",
		lenient: true,
		// networks exists on egress peers only.
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: future-cnp}
spec:
  tier: Admin
  priority: 1
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: r, action: Deny, from: [{networks: [198.18.250.0/24]}]}]
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin CNP/future-cnp r Deny"},
			{from: outside, to: "x/b", port: "80", allowed: false, ingress: "Admin CNP/future-cnp r Deny"},
			{from: "x/a", to: "y/a", port: "80", allowed: true},
		}},
	{item: itemFailClosed, name: "an ingress peer with only a field netpol does not know (serviceAccounts): Allow matches nothing",
		lenient:  true,
		policies: futureIngressToX("Allow"),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Default Allow"},
			{from: "198.19.9.9", to: "x/b", port: "8080", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemFailClosed, name: "an ingress peer with only a field netpol does not know (serviceAccounts): Deny denies everything",
		lenient:  true,
		policies: futureIngressToX("Deny"),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/future r Deny"},
			{from: "198.19.9.9", to: "x/b", port: "8080", allowed: false, ingress: "Admin ANP/future r Deny"},
		}},
	{item: itemFailClosed, name: "an ingress peer with only a field netpol does not know (serviceAccounts): Pass denies everything",
		lenient:  true,
		policies: futureIngressToX("Pass"),
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/future r Deny"},
			{from: "198.19.9.9", to: "x/b", port: "8080", allowed: false, ingress: "Admin ANP/future r Deny"},
		}},
	// Admin peers: networks also match pod IPs; nodes match node addresses.
	{item: itemAdminPeers, name: "networks matches pod IPs",
		policies: anpEgressOfA(`{name: r, action: Deny, to: [{networks: [198.18.2.0/24]}]}`),
		flows: []semFlow{
			{from: "x/a", to: "y/a", port: "80", allowed: false, egress: "Admin ANP/anp r Deny"},
			{from: "x/a", to: "y/b", port: "80", allowed: false, egress: "Admin ANP/anp r Deny"},
			{from: "x/a", to: "198.18.2.77", port: "80", allowed: false, egress: "Admin ANP/anp r Deny"},
			{from: "x/a", to: "x/b", port: "80", allowed: true, egress: "Default Allow"},
			{from: "x/a", to: "node/n2", port: "80", allowed: true, egress: "Default Allow"},
		}},
	{item: itemAdminPeers, name: "nodes matches node addresses by node labels",
		policies: anpEgressOfA(`{name: r, action: Deny, to: [{nodes: {matchLabels: {zone: b}}}]}`),
		flows: []semFlow{
			{from: "x/a", to: "node/n2", port: "80", allowed: false, egress: "Admin ANP/anp r Deny"},
			{from: "x/a", to: "198.19.255.2", port: "80", allowed: false, egress: "Admin ANP/anp r Deny"},
			{from: "x/a", to: "node/n1", port: "80", allowed: true, egress: "Default Allow"},
			// A pod running on n2 is not n2's address.
			{from: "x/a", to: "x/b", port: "80", allowed: true, egress: "Default Allow"},
			{from: "x/a", to: "y/a", port: "80", allowed: true, egress: "Default Allow"},
		}},
	{item: itemAdminPeers, name: "nodes {} matches every node, host-network pods included",
		policies: anpEgressOfA(`{name: r, action: Deny, to: [{nodes: {}}]}`),
		flows: []semFlow{
			{from: "x/a", to: "node/n1", port: "80", allowed: false, egress: "Admin ANP/anp r Deny"},
			{from: "x/a", to: "x/host", port: "80", allowed: false, egress: "Admin ANP/anp r Deny"},
			{from: "x/a", to: "y/b", port: "80", allowed: true, egress: "Default Allow"},
		}},
	{item: itemAdminPeers, name: "admin ports: portNumber, portRange (inclusive), namedPort per destination pod",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: ports}
spec:
  priority: 1
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - name: r
    action: Deny
    from: [{namespaces: {matchLabels: {ns: "y"}}}]
    ports:
    - portNumber: {protocol: UDP, port: 53}
    - portRange: {protocol: TCP, start: 8000, end: 8010}
    - namedPort: http
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "53/udp", allowed: false, ingress: "Admin ANP/ports r Deny"},
			{from: "y/a", to: "x/a", port: "53/tcp", allowed: true, ingress: "Default Allow"},
			{from: "y/a", to: "x/a", port: "7999", allowed: true},
			{from: "y/a", to: "x/a", port: "8000", allowed: false, ingress: "Admin ANP/ports r Deny"},
			{from: "y/a", to: "x/a", port: "8010", allowed: false, ingress: "Admin ANP/ports r Deny"},
			{from: "y/a", to: "x/a", port: "8011", allowed: true},
			{from: "y/a", to: "x/a", port: "8005/udp", allowed: true},
			// http: 80/TCP on x/a, 8080/TCP on x/b, none on x/c.
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/ports r Deny"},
			{from: "y/a", to: "x/b", port: "8080", allowed: false, ingress: "Admin ANP/ports r Deny"},
			{from: "y/a", to: "x/b", port: "80", allowed: true},
			{from: "y/a", to: "x/c", port: "80", allowed: true},
		}},
	{item: itemAdminPeers, name: "domainNames never match a flow addressed by IP",
		policies: anpEgressOfA(`{name: dns, action: Allow, to: [{domainNames: [example.com]}]}`) + `---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-out}
spec:
  priority: 2
  subject: {namespaces: {matchLabels: {ns: x}}}
  egress: [{name: r, action: Deny, to: [{networks: [0.0.0.0/0]}]}]
`,
		flows: []semFlow{
			{from: "x/a", to: outside, port: "443", allowed: false, egress: "Admin ANP/deny-out r Deny"},
		}},
	{item: itemAdminPeers, topology: dualStack, name: "networks in IPv6 match pod IPv6 addresses",
		policies: anpEgressOfA(`{name: r, action: Deny, to: [{networks: ["fd00:198:18:2::/64"]}]}`),
		flows: []semFlow{
			{from: "x/a", to: "x/c", port: "80", allowed: false, egress: "Admin ANP/anp r Deny"},
			{from: "x/a", to: "fd00:198:18:2::77", port: "80", allowed: false, egress: "Admin ANP/anp r Deny"},
			{from: "x/a", to: "fd00:198:18:1::2", port: "80", allowed: true, egress: "Default Allow"},
			{from: "x/a", to: "x/b", port: "80", allowed: true, egress: "Default Allow"},
		}},
	// Seed-only (KEP-2091): namespaces related Self and NotSelf.
	{item: itemKEPRelated, topology: kepTopology, name: "related Self with a baseline deny behind it (the KEP example)",
		policies: kepSelf + "---\n" + kepBaselineDeny,
		flows: []semFlow{
			{from: "x/b1", to: "x/a1", port: "80", allowed: true, ingress: kepAllowed},
			{from: "y/b2", to: "y/a2", port: "80", allowed: true, ingress: kepAllowed},
			{from: "y/b2", to: "x/a1", port: "80", allowed: false, ingress: kepBaseline},
			{from: "x/b1", to: "y/a2", port: "80", allowed: false, ingress: kepBaseline},
			{from: "x/a1", to: "x/b1", port: "80", allowed: false, ingress: kepBaseline},
			{from: "y/a2", to: "y/b2", port: "80", allowed: false, ingress: kepBaseline},
		}},
	{item: itemKEPRelated, topology: kepTopology, name: "related Self alone isolates nothing",
		policies: kepSelf,
		flows: []semFlow{
			{from: "x/b1", to: "x/a1", port: "80", allowed: true, ingress: kepAllowed},
			{from: "y/b2", to: "x/a1", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemKEPRelated, topology: kepTopology, name: "related Self wins over NetworkPolicy isolation",
		policies: kepSelf + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress]}
`,
		flows: []semFlow{
			{from: "x/b1", to: "x/a1", port: "80", allowed: true, ingress: kepAllowed},
			{from: "y/b2", to: "x/a1", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/deny-all"},
			{from: "y/b2", to: "y/a2", port: "80", allowed: true, ingress: kepAllowed},
		}},
	{item: itemKEPRelated, topology: kepTopology, name: "a KEP namespaces peer with no field netpol knows: Allow matches nothing",
		lenient: true,
		// "relatd" is a typo; the second rule makes the shape unambiguous.
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: kep}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress:
  - {name: future, action: Allow, from: [{namespaces: {relatd: NotSelf}}]}
  - {name: self, action: Allow, from: [{namespaces: {related: Self}}]}
---
` + kepBaselineDeny,
		flows: []semFlow{
			{from: "x/b1", to: "x/a1", port: "80", allowed: true, ingress: "Admin ANP/kep self Allow"},
			{from: "y/b2", to: "x/a1", port: "80", allowed: false, ingress: kepBaseline},
		}},
	{item: itemKEPRelated, topology: kepTopology, name: "a KEP namespaces peer with no field netpol knows: Deny denies everything",
		lenient: true,
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: kep}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: x}}}
  ingress:
  - {name: future, action: Deny, from: [{namespaces: {relatd: NotSelf}}]}
  - {name: self, action: Allow, from: [{namespaces: {related: Self}}]}
`,
		flows: []semFlow{
			{from: "x/b1", to: "x/a1", port: "80", allowed: false, ingress: "Admin ANP/kep future Deny"},
			{from: "y/b2", to: "x/a1", port: "80", allowed: false, ingress: "Admin ANP/kep future Deny"},
			{from: outside, to: "x/a1", port: "80", allowed: false, ingress: "Admin ANP/kep future Deny"},
			{from: "x/a1", to: "y/b2", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemKEPRelated, topology: kepTopology, name: "related NotSelf with a baseline deny",
		policies: kepRelated(`namespaces: {related: NotSelf}`) + "---\n" + kepBaselineDeny,
		flows: []semFlow{
			{from: "y/b2", to: "x/a1", port: "80", allowed: true, ingress: kepAllowed},
			{from: "y/a2", to: "x/b1", port: "80", allowed: true, ingress: kepAllowed},
			{from: "x/a1", to: "y/a2", port: "80", allowed: true, ingress: kepAllowed},
			{from: "x/b1", to: "x/a1", port: "80", allowed: false, ingress: kepBaseline},
			{from: "y/a2", to: "y/b2", port: "80", allowed: false, ingress: kepBaseline},
		}},
	{item: itemKEPRelated, name: "related Self on a pod peer and NotSelf on a namespace peer, in one policy",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: self}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress:
  - {name: same-ns-b, action: Allow, from: [{pods: {namespaces: {related: Self}, podSelector: {matchLabels: {app: b}}}}]}
  - {name: other-ns, action: Deny, from: [{namespaces: {related: NotSelf}}]}
`,
		flows: []semFlow{
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: "Admin ANP/self same-ns-b Allow"},
			{from: "y/b", to: "y/a", port: "80", allowed: true, ingress: "Admin ANP/self same-ns-b Allow"},
			{from: "y/b", to: "x/a", port: "80", allowed: false, ingress: "Admin ANP/self other-ns Deny"},
			{from: "x/b", to: "y/a", port: "80", allowed: false, ingress: "Admin ANP/self other-ns Deny"},
		}},
	// Seed-only (KEP-2091): sameLabels and notSameLabels.
	{item: itemSameLabels, topology: tenantTopology, name: "sameLabels Pass skips the lower deny within a tenant",
		policies: tenantPassAndDeny,
		flows: []semFlow{
			{from: "t1-ns2/a", to: "t1-ns1/a", port: "80", allowed: true, ingress: tenantPass + " > Default Allow"},
			{from: "t1-ns1/b", to: "t1-ns1/a", port: "80", allowed: true, ingress: tenantPass + " > Default Allow"},
			{from: "t1-ns1/a", to: "t1-ns2/a", port: "53/udp", allowed: true, ingress: tenantPass + " > Default Allow"},
			{from: "t2-ns1/a", to: "t1-ns1/a", port: "80", allowed: false, ingress: tenantDeny},
			{from: "t1-ns1/a", to: "t2-ns1/a", port: "80", allowed: false, ingress: tenantDeny},
			// shared has no tenant label: never the same tenant.
			{from: "shared/a", to: "t1-ns1/a", port: "80", allowed: false, ingress: tenantDeny},
			// shared is no subject.
			{from: "t1-ns1/a", to: "shared/a", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemSameLabels, topology: tenantTopology, name: "passed traffic is decided by the tenant's NetworkPolicy",
		policies: tenantPassAndDeny + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: t1-ns1}
spec: {podSelector: {}, policyTypes: [Ingress]}
`,
		flows: []semFlow{
			{from: "t1-ns2/a", to: "t1-ns1/a", port: "80", allowed: false, ingress: tenantPass + " > NetworkPolicy Deny isolatedBy=NP/t1-ns1/deny-all"},
			{from: "t1-ns1/b", to: "t1-ns1/a", port: "80", allowed: false, ingress: tenantPass + " > NetworkPolicy Deny isolatedBy=NP/t1-ns1/deny-all"},
			{from: "t1-ns1/a", to: "t1-ns2/a", port: "80", allowed: true, ingress: tenantPass + " > Default Allow"},
		}},
	{item: itemSameLabels, topology: tenantTopology, name: "a deny of higher precedence comes before the Pass",
		policies: tenantANP("pass-same-tenant", "20", `{name: pass, action: Pass, from: [{namespaces: {sameLabels: [tenant]}}]}`) +
			"---\n" + tenantANP("deny-all-ingress", "10", `{name: deny, action: Deny, from: [{namespaces: {namespaceSelector: {}}}]}`),
		flows: []semFlow{
			{from: "t1-ns2/a", to: "t1-ns1/a", port: "80", allowed: false, ingress: tenantDeny},
		}},
	{item: itemSameLabels, topology: tenantTopology, name: "notSameLabels Deny stops other tenants and tenantless namespaces",
		policies: tenantANP("deny-other-tenants", "10", `{name: deny, action: Deny, from: [{namespaces: {notSameLabels: [tenant]}}]}`),
		flows: []semFlow{
			{from: "t2-ns1/a", to: "t1-ns1/a", port: "80", allowed: false, ingress: "Admin ANP/deny-other-tenants deny Deny"},
			{from: "shared/a", to: "t1-ns1/a", port: "80", allowed: false, ingress: "Admin ANP/deny-other-tenants deny Deny"},
			{from: "t1-ns1/a", to: "t2-ns1/a", port: "80", allowed: false, ingress: "Admin ANP/deny-other-tenants deny Deny"},
			{from: "t1-ns2/a", to: "t1-ns1/a", port: "80", allowed: true, ingress: "Default Allow"},
			{from: "t1-ns1/b", to: "t1-ns1/a", port: "80", allowed: true, ingress: "Default Allow"},
			{from: "t1-ns1/a", to: "shared/a", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemSameLabels, topology: tenantTopology, name: "sameLabels Pass and notSameLabels Deny in one policy",
		policies: tenantANP("tenants", "20", `{name: pass-same, action: Pass, from: [{namespaces: {sameLabels: [tenant]}}]}
  - {name: deny-rest, action: Deny, from: [{namespaces: {notSameLabels: [tenant]}}]}`),
		flows: []semFlow{
			{from: "t1-ns2/a", to: "t1-ns1/a", port: "80", allowed: true, ingress: "Admin ANP/tenants pass-same Pass > Default Allow"},
			{from: "t2-ns1/a", to: "t1-ns1/a", port: "80", allowed: false, ingress: "Admin ANP/tenants deny-rest Deny"},
			{from: "shared/a", to: "t1-ns1/a", port: "80", allowed: false, ingress: "Admin ANP/tenants deny-rest Deny"},
		}},
	// The v1beta1 proposal's namespace isolation (Options.LegacyNamespaceIsolation).
	{item: itemLegacy, topology: legacyTopology, name: "on: the annotated namespace denies ingress unless a policy allows it",
		opts: engine.Options{LegacyNamespaceIsolation: true},
		flows: []semFlow{
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/allow-b ingress[0] Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "NetworkPolicy Deny*"},
			// No policy selects x/c: the namespace isolates it anyway,
			// from its own namespace too.
			{from: "y/a", to: "x/c", port: "80", allowed: false, ingress: "NetworkPolicy Deny*"},
			{from: "x/a", to: "x/c", port: "80", allowed: false, ingress: "NetworkPolicy Deny*"},
			{from: "198.18.200.1", to: "x/c", port: "80", allowed: false, ingress: "NetworkPolicy Deny*"},
			// y is not annotated: its policies isolate nothing.
			{from: "x/a", to: "y/a", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	{item: itemLegacy, topology: legacyTopology, name: "off: the annotation has no effect",
		flows: []semFlow{
			{from: "y/a", to: "x/c", port: "80", allowed: true, ingress: "Default Allow"},
			{from: "x/a", to: "x/c", port: "80", allowed: true, ingress: "Default Allow"},
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/allow-b ingress[0] Allow"},
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/allow-b"},
			{from: "x/a", to: "y/a", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/y/y-deny"},
		}},
	{item: itemLegacy, topology: semTopologyDefaultDenyX, name: "on, and no policy anywhere: the annotated namespace alone isolates",
		opts: engine.Options{LegacyNamespaceIsolation: true},
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=Namespace/x"},
			{from: "x/a", to: "y/a", port: "80", allowed: true, egress: "Default Allow", ingress: "Default Allow"},
		}},
	{item: itemLegacy, topology: semTopologyDefaultDenyX, name: "off, and no policy anywhere: the annotation alone has no effect",
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: true, ingress: "Default Allow"},
		}},
	// Traces: a NetworkPolicy-tier deny names every policy that isolates the pod.
	{item: itemIsolatedBy, name: "an NP-tier deny lists every policy isolating the pod in that direction",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-one, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  ingress: [{from: [{podSelector: {matchLabels: {app: b}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-two, namespace: x}
spec:
  podSelector: {}
  ingress: [{from: [{podSelector: {matchLabels: {app: c}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-egress, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  policyTypes: [Egress]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-other, namespace: x}
spec:
  podSelector: {matchLabels: {app: b}}
  ingress: [{from: [{podSelector: {matchLabels: {app: c}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-y, namespace: "y"}
spec: {podSelector: {}, policyTypes: [Ingress]}
`,
		flows: []semFlow{
			{from: "y/a", to: "x/a", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/np-one,NP/x/np-two"},
			// The allow rules of the isolating policies are a union.
			{from: "x/b", to: "x/a", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/np-one ingress[0] Allow"},
			{from: "x/c", to: "x/a", port: "80", allowed: true, ingress: "NetworkPolicy NP/x/np-two ingress[0] Allow"},
			{from: "y/a", to: "x/b", port: "80", allowed: false, ingress: "NetworkPolicy Deny isolatedBy=NP/x/np-other,NP/x/np-two"},
			{from: "x/a", to: "x/c", port: "80", allowed: false, egress: "NetworkPolicy Deny isolatedBy=NP/x/np-egress"},
		}},
}

// semTopology: namespaces x and y; node n1 (zone a) runs x/a, y/b and the
// host-network pod x/host (labelled like x/a); node n2 (zone b) runs x/b,
// x/c and y/a. x/a names port 80/TCP "http" and 53/UDP "dns"; x/b names
// 8080/TCP "http" and 5353/TCP "dns".
const semTopology = `
apiVersion: v1
kind: Namespace
metadata: {name: x, labels: {ns: x}}
---
apiVersion: v1
kind: Namespace
metadata: {name: "y", labels: {ns: "y"}}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
status: {addresses: [{type: InternalIP, address: 198.19.255.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {zone: b}}
status: {addresses: [{type: InternalIP, address: 198.19.255.2}]}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {app: a}}
spec:
  nodeName: n1
  containers:
  - name: c
    ports:
    - {name: http, containerPort: 80}
    - {name: dns, containerPort: 53, protocol: UDP}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: x, labels: {app: b}}
spec:
  nodeName: n2
  containers:
  - name: c
    ports:
    - {name: http, containerPort: 8080}
    - {name: dns, containerPort: 5353, protocol: TCP}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: c, namespace: x, labels: {app: c}}
spec: {nodeName: n2, containers: [{name: c}]}
status: {podIP: 198.18.1.3}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: "y", labels: {app: a}}
spec:
  nodeName: n2
  containers: [{name: c, ports: [{name: http, containerPort: 80}]}]
status: {podIP: 198.18.2.1}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: "y", labels: {app: b}}
spec: {nodeName: n1, containers: [{name: c}]}
status: {podIP: 198.18.2.2}
---
apiVersion: v1
kind: Pod
metadata: {name: host, namespace: x, labels: {app: a}}
spec: {nodeName: n1, hostNetwork: true, containers: [{name: c}]}
status: {podIP: 198.19.255.1}
`

// semTopologyDefaultDenyX is semTopology with namespace x annotated for the
// v1beta1 proposal's ingress isolation.
var semTopologyDefaultDenyX = strings.Replace(semTopology, "metadata: {name: x, labels: {ns: x}}\n",
	"metadata: {name: x, labels: {ns: x}, annotations: {net.beta.kubernetes.io/network-policy: '{\"ingress\": {\"isolation\": \"DefaultDeny\"}}'}}\n", 1)

// dualStack: namespace x; x/a and x/b have an IPv4 and an IPv6 address,
// x/c only an IPv6 one, in fd00:198:18:2::/64.
const dualStack = `
apiVersion: v1
kind: Namespace
metadata: {name: x, labels: {ns: x}}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {app: a}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 80}]}]}
status: {podIPs: [{ip: 198.18.1.1}, {ip: "fd00:198:18:1::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: x, labels: {app: b}}
spec: {containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.2}, {ip: "fd00:198:18:1::2"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: c, namespace: x, labels: {app: c}}
spec: {containers: [{name: c}]}
status: {podIPs: [{ip: "fd00:198:18:2::3"}]}
`

// outside is an address of no pod and no node.
const outside = "198.18.200.1"

const v1 = "networking.k8s.io/v1"

// Traces of the NetworkPolicy "np" in x.
const (
	npAllow = "NetworkPolicy NP/x/np ingress[0] Allow"
	npDeny  = "NetworkPolicy Deny isolatedBy=NP/x/np"
)

// npIngressToA is a NetworkPolicy "np" in x selecting app=a with the given
// ingress rules (YAML flow list).
func npIngressToA(apiVersion, ingress string) string {
	return `
apiVersion: ` + apiVersion + `
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  ingress: ` + ingress + `
`
}

// npA is a NetworkPolicy "np" in x selecting app=a, with more of its spec
// (YAML lines indented by two).
func npA(spec string) string {
	return `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
` + spec
}

// npPortsX is a NetworkPolicy "np" selecting every pod of x (named ports
// differ per pod) with one ingress rule of the given ports.
func npPortsX(ports string) string {
	return `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: x}
spec:
  podSelector: {}
  ingress: [{ports: ` + ports + `}]
`
}

// denyAllIngressX isolates every pod of x for ingress.
const denyAllIngressX = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress]}
`

// deniedByDenyAll is the trace of a side that x's deny-all isolates.
const deniedByDenyAll = "NetworkPolicy Deny isolatedBy=NP/x/deny-all"

// anpX is an AdminNetworkPolicy whose subject is namespace x, with ingress
// rules (YAML list items indented by two).
func anpX(name string, priority, rules string) string {
	return `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: ` + name + `}
spec:
  priority: ` + priority + `
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
` + rules
}

// Admin ingress rules for anpX.
const (
	ruleAllowB = `  - {name: allow-b, action: Allow, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: b}}}}]}
`
	ruleDenyY = `  - {name: deny-y, action: Deny, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
`
	ruleAllowAll = `  - {name: allow-all, action: Allow, from: [{namespaces: {}}]}
`
	ruleDenyB = `  - {name: deny-b, action: Deny, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: b}}}}]}
`
)

// passY is the trace of passAndDeny's Pass.
const passY = "Admin ANP/pass-y pass-y Pass"

const passAndDeny = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: pass-y}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: pass-y, action: Pass, from: [{namespaces: {matchLabels: {ns: "y"}}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-all}
spec:
  priority: 20
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: deny-all, action: Deny, from: [{namespaces: {}}]}]
`

const allowBToA = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-b, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  ingress: [{from: [{namespaceSelector: {}, podSelector: {matchLabels: {app: b}}}]}]
`

const banpDenyAll = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {namespaces: {}}
  ingress: [{name: deny-all, action: Deny, from: [{namespaces: {}}]}]
`

// banpX is the BaselineAdminNetworkPolicy whose subject is namespace x,
// with ingress rules (YAML list items indented by two).
func banpX(rules string) string {
	return `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
` + rules
}

// ruleDenyAll is a deny of every pod, for banpX.
const ruleDenyAll = `  - {name: deny-all, action: Deny, from: [{namespaces: {}}]}
`

// banpDenied is the trace of banpX(ruleDenyAll).
const banpDenied = "Baseline BANP/default deny-all Deny"

// cnpX is a ClusterNetworkPolicy whose subject is namespace x, with ingress
// rules (YAML list items indented by two).
func cnpX(name, tier, priority, rules string) string {
	return `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: ` + name + `}
spec:
  tier: ` + tier + `
  priority: ` + priority + `
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
` + rules
}

// futureEgressOfA is an AdminNetworkPolicy for x/a with an egress rule of
// the action whose peer has only "namespace" (singular), no field of an
// egress peer: the peer has no field netpol knows.
func futureEgressOfA(action string) string {
	return `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: future}
spec:
  priority: 1
  subject: {pods: {namespaceSelector: {matchLabels: {ns: x}}, podSelector: {matchLabels: {app: a}}}}
  egress:
  - name: r
    action: ` + action + `
    to:
    - namespace: {matchLabels: {ns: "y"}}
`
}

// futureDenied is the trace of futureEgressOfA's rule, whatever its action
// but Allow.
const futureDenied = "Admin ANP/future r Deny"

// futureIngressToX is an AdminNetworkPolicy for namespace x with an ingress
// rule of the action whose peer has only serviceAccounts, which netpol
// does not read.
func futureIngressToX(action string) string {
	return `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: future}
spec:
  priority: 1
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - {name: r, action: ` + action + `, from: [{serviceAccounts: {}}]}
`
}

// anpEgressOfA is an AdminNetworkPolicy "anp" for x/a with one egress rule.
func anpEgressOfA(rule string) string {
	return `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: anp}
spec:
  priority: 1
  subject: {pods: {namespaceSelector: {matchLabels: {ns: x}}, podSelector: {matchLabels: {app: a}}}}
  egress:
  - ` + rule + `
`
}

// kepTopology is the KEP-2091 example: a1 and b1 in x, a2 and b2 in y.
const kepTopology = `
apiVersion: v1
kind: Namespace
metadata: {name: x}
---
apiVersion: v1
kind: Namespace
metadata: {name: "y"}
---
{apiVersion: v1, kind: Pod, metadata: {name: a1, namespace: x, labels: {app: a}}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.10.1}}
---
{apiVersion: v1, kind: Pod, metadata: {name: b1, namespace: x, labels: {app: b}}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.10.2}}
---
{apiVersion: v1, kind: Pod, metadata: {name: a2, namespace: "y", labels: {app: a}}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.11.1}}
---
{apiVersion: v1, kind: Pod, metadata: {name: b2, namespace: "y", labels: {app: b}}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.11.2}}
`

// kepBaselineDeny is the baseline behind the KEP examples, in the KEP shape.
const kepBaselineDeny = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {namespaces: {}}
  ingress:
  - action: Deny
    from: [{namespaces: {namespaceSelector: {}}}]
`

// kepRelated is the KEP example's AdminNetworkPolicy "kep": every namespace
// allows ingress from the peer.
func kepRelated(peer string) string {
	return `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: kep}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress:
  - action: Allow
    from:
    - ` + peer + `
`
}

// kepSelf allows app=b pods of the subject's own namespace.
var kepSelf = kepRelated(`pods: {namespaces: {related: Self}, podSelector: {matchLabels: {app: b}}}`)

// Traces of kepRelated's rule and of kepBaselineDeny.
const (
	kepAllowed  = "Admin ANP/kep ingress[0] Allow"
	kepBaseline = "Baseline BANP/default ingress[0] Deny"
)

// tenantTopology is the KEP-2091 sameLabels example: t1-ns1 and t1-ns2 are
// tenant t1, t2-ns1 is tenant t2, and shared has no tenant label.
const tenantTopology = `
{apiVersion: v1, kind: Namespace, metadata: {name: t1-ns1, labels: {tenant: t1}}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: t1-ns2, labels: {tenant: t1}}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: t2-ns1, labels: {tenant: t2}}}
---
{apiVersion: v1, kind: Namespace, metadata: {name: shared}}
---
{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: t1-ns1}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.20.1}}
---
{apiVersion: v1, kind: Pod, metadata: {name: b, namespace: t1-ns1}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.20.2}}
---
{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: t1-ns2}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.21.1}}
---
{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: t2-ns1}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.22.1}}
---
{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: shared}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.23.1}}
`

// tenantANP is an AdminNetworkPolicy whose subject is every namespace with
// a tenant label, with ingress rules (the first list item's text; more
// items indented by two).
func tenantANP(name, priority, rule string) string {
	return `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: ` + name + `}
spec:
  priority: ` + priority + `
  subject:
    namespaces:
      matchExpressions: [{key: tenant, operator: Exists}]
  ingress:
  - ` + rule + `
`
}

// tenantPassAndDeny passes traffic within a tenant and denies the rest.
var tenantPassAndDeny = tenantANP("pass-same-tenant", "20", `{name: pass, action: Pass, from: [{namespaces: {sameLabels: [tenant]}}]}`) +
	"---\n" + tenantANP("deny-all-ingress", "30", `{name: deny, action: Deny, from: [{namespaces: {namespaceSelector: {}}}]}`)

// Traces of tenantPassAndDeny.
const (
	tenantPass = "Admin ANP/pass-same-tenant pass Pass"
	tenantDeny = "Admin ANP/deny-all-ingress deny Deny"
)

// legacyTopology: namespace x carries the v1beta1 proposal's DefaultDeny
// annotation, y does not. allow-b lets x/b into x/a; y-deny would isolate
// every pod of y in networking.k8s.io/v1 semantics.
const legacyTopology = `
apiVersion: v1
kind: Namespace
metadata:
  name: x
  annotations:
    net.beta.kubernetes.io/network-policy: '{"ingress":{"isolation":"DefaultDeny"}}'
---
apiVersion: v1
kind: Namespace
metadata: {name: "y"}
---
{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: x, labels: {app: a}}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.30.1}}
---
{apiVersion: v1, kind: Pod, metadata: {name: b, namespace: x, labels: {app: b}}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.30.2}}
---
{apiVersion: v1, kind: Pod, metadata: {name: c, namespace: x, labels: {app: c}}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.30.3}}
---
{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: "y", labels: {app: a}}, spec: {containers: [{name: c}]}, status: {podIP: 198.18.31.1}}
---
apiVersion: extensions/v1beta1
kind: NetworkPolicy
metadata: {name: allow-b, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  ingress: [{from: [{podSelector: {matchLabels: {app: b}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: y-deny, namespace: "y"}
spec: {podSelector: {}, policyTypes: [Ingress]}
`
