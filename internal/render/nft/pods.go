package nft

import (
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
)

// Every packet of a local pod is judged as that pod's. The verdict maps
// find a pod's rules by address, so a packet whose address no map holds
// would pass unjudged: one with a forged source (a pod with NET_RAW), one
// from the pod's IPv6 link-local address, and every packet of a pod the
// agent has not programmed yet. So a packet that comes from a pod
// interface (IR.PodInterfaces, globs such as "veth*") must carry, as its
// source, an address programmed for that very interface, and a packet
// forwarded to a pod interface must be addressed to one: pod-addrs-4/-6
// hold "address . interface" for every local pod (LocalPod.Interface);
// anything else from or to a pod interface is dropped, before any policy
// looks at it. That ties each packet to the pod whose interface it used
// (Calico's "unknown interface" drop is the model), fails closed for a
// pod between its start and the pass that programs it, and leaves the
// node's own traffic (the output hook: kubelet probes) alone. IPv6
// neighbour discovery is link plumbing and passes, as ARP does.
const (
	chainFromPod = "from-pod"
	chainToPod   = "to-pod"
	podAddrs4    = "pod-addrs-4"
	podAddrs6    = "pod-addrs-6"
)

// neighbourDiscovery matches IPv6 neighbour discovery that a pod sends to
// its node or, across a bridge, to a pod of the node. Router
// advertisements are not in it: a pod does not route for others.
const neighbourDiscovery = "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit }"

// podObjects adds the sets and chains that tie packets to pod interfaces,
// when the IR names pod interfaces.
func podObjects(rs *ruleset, ir *compile.IR) {
	rs.podInterfaces = ir.PodInterfaces
	if len(ir.PodInterfaces) == 0 {
		return
	}
	v4 := &container{typ: "ipv4_addr . ifname", elements: map[string]string{}, comment: "local pods: address . host-side interface"}
	v6 := &container{typ: "ipv6_addr . ifname", elements: map[string]string{}, comment: "local pods: address . host-side interface"}
	for _, p := range ir.Pods {
		if !compile.ValidInterface(p.Interface) {
			continue // not found (yet): its packets are dropped
		}
		for _, ip := range p.IPs {
			c := v4
			if ip.Is6() {
				c = v6
			}
			c.elements[ip.String()+" . "+quoteInterface(p.Interface)] = ""
		}
	}
	rs.sets[podAddrs4], rs.sets[podAddrs6] = v4, v6
	rs.chains[chainFromPod] = []rule{
		{text: "ip saddr . iifname @" + podAddrs4 + " return"},
		{text: "ip6 saddr . iifname @" + podAddrs6 + " return"},
		{text: neighbourDiscovery + " return"},
		{text: "ct direction reply fib daddr type local return", comment: "replies to the node's own connections: kubelet probes of a pod not programmed yet"},
		{text: "drop", comment: "from a pod interface, a source not programmed for it: forged, link-local, or a pod not programmed yet"},
	}
	rs.chains[chainToPod] = []rule{
		{text: "ip daddr . oifname @" + podAddrs4 + " return"},
		{text: "ip6 daddr . oifname @" + podAddrs6 + " return"},
		{text: neighbourDiscovery + " return"},
		{text: "drop", comment: "to a pod interface, an address not programmed for it: a pod not programmed yet"},
	}
}

// podCheckPriority places the check of what comes from a pod interface in
// prerouting after conntrack (-200: a reply to the node's own connection
// is known as one) and before everything that acts on a packet there: the
// DNS divert and its query log (mangle, -150), kube-proxy's DNAT (-100).
const podCheckPriority = knftables.BaseChainPriority("-160")

// writePodRules sends what comes from a pod interface through the check of
// podObjects in prerouting, at podCheckPriority: before the DNS divert and
// its query log see the packet, and before any accept. Checked later (forward, input),
// behind "ct state established accept", a forged packet whose tuple is that
// of a live connection (another pod's flow, a DNS answer to the forger's
// own query forged from the server's address) was established and passed
// unchecked. What goes to a pod interface is checked in forward, where the
// output interface is known.
func writePodRules(tx ops, want *ruleset) {
	for _, glob := range want.podInterfaces {
		tx.Add(&knftables.Rule{Chain: chainPrerouting, Rule: "iifname " + quoteInterface(glob) + " jump " + chainFromPod})
	}
	for _, glob := range want.podInterfaces {
		tx.Add(&knftables.Rule{Chain: chainForward, Rule: "oifname " + quoteInterface(glob) + " jump " + chainToPod})
	}
}

// quoteInterface writes an interface name or glob as an nft string. Only
// names that compile.ValidInterface accepts get here (podObjects, and the
// agent's flag for globs), and they hold no quote or backslash: nft
// strings have no escapes.
func quoteInterface(name string) string { return `"` + name + `"` }
