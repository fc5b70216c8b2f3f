package nft

import (
	"fmt"

	"github.com/netpol/netpol/internal/compile"
)

// Recording observed traffic (compile.IR.Record) in the kernel, for the
// agent's record (package record). It changes no verdict:
//
//	forward, input: ... ; ct state new jump record   (the last rule)
//	record:         ip saddr @record-local-4 goto record-allow   (and the
//	                daddr, and IPv6: a local pod at either end, logged once)
//	record-allow:   limit ... log prefix "np-rec:allow:" group 101
//	record-deny:    limit ... log prefix "np-rec:deny:" group 101; drop
//
// A new connection that reaches the end of a base chain got past both
// directions: allowed. A table's drops are "goto record-deny" instead of
// "drop" (and an audited drop's log chain ends there), so a denied one is
// logged where it is dropped. Only new connections get this far, so a log
// line is a connection. The limit guards the log alone, as the audit's
// does; past it the packet is not recorded and its verdict is unchanged.

// RecordGroup is the netfilter log group of recorded connections.
const RecordGroup = 101

// Prefixes of recorded connections, by verdict.
const (
	RecordAllowPrefix = "np-rec:allow:"
	RecordDenyPrefix  = "np-rec:deny:"
)

const (
	chainRecord      = "record"
	chainRecordAllow = "record-allow"
	chainRecordDeny  = "record-deny"
	setRecordLocal   = "record-local"
	recordLimit      = "limit rate 1000/second burst 1000 packets"
)

// recordObjects adds the record chains and the set of the node's pod
// addresses that a recorded connection has at one end.
func recordObjects(rs *ruleset, ir *compile.IR) {
	rs.record = true
	v4 := &container{typ: "ipv4_addr", elements: map[string]string{}, comment: "this node's pods"}
	v6 := &container{typ: "ipv6_addr", elements: map[string]string{}, comment: "this node's pods"}
	for _, p := range ir.Pods {
		for _, ip := range p.IPs {
			if ip.Is4() {
				v4.elements[ip.String()] = ""
			} else {
				v6.elements[ip.String()] = ""
			}
		}
	}
	rs.sets[setRecordLocal+"-4"], rs.sets[setRecordLocal+"-6"] = v4, v6
	var match []rule
	for _, addr := range []string{"saddr", "daddr"} {
		match = append(match,
			rule{text: fmt.Sprintf("ip %s @%s-4 goto %s", addr, setRecordLocal, chainRecordAllow)},
			rule{text: fmt.Sprintf("ip6 %s @%s-6 goto %s", addr, setRecordLocal, chainRecordAllow)})
	}
	rs.chains[chainRecord] = match
	rs.chains[chainRecordAllow] = []rule{{text: fmt.Sprintf("%s log prefix %q group %d", recordLimit, RecordAllowPrefix, RecordGroup)}}
	rs.chains[chainRecordDeny] = []rule{
		{text: fmt.Sprintf("%s log prefix %q group %d", recordLimit, RecordDenyPrefix, RecordGroup)},
		{text: "drop"},
	}
}
