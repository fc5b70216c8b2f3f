package nft

import (
	"fmt"
	"time"

	"github.com/netpol/netpol/internal/compile"
)

// Recording observed traffic (compile.IR.Record) in the kernel, for the
// agent's record (package observed). It changes no verdict:
//
//	forward, input: ... ; ct state new jump record   (the last rule)
//	record:         ip saddr @record-local-4 goto record-allow   (and the
//	                daddr, and IPv6: a local pod at either end, logged once)
//	record-allow:   seen in record-allowed-4 within the window: return;
//	                else limit ... update @record-allowed-4 { key } log
//	                prefix "np-rec:allow:" group 101
//	record-deny:    seen in record-denied-4 within the window: drop;
//	                else limit ... update @record-denied-4 { key } log
//	                prefix "np-rec:deny:" group 101; drop
//
// A new connection that reaches the end of a base chain got past both
// directions: allowed. A table's drops are "goto record-deny" instead of
// "drop" (and an audited drop's log chain ends there), so a denied one is
// logged where it is dropped.
//
// "ct state new" holds for every packet of a flow until a reply is seen:
// each packet of a one-way UDP stream and each retransmitted SYN of a
// denied connection. The sets fold those: a source, destination, protocol
// and destination port is logged once per RecordWindow (key, the key of
// the sets), so a chatty sender costs one line a window and cannot spend
// the log's rate limit that other flows need. The limit guards the log
// alone, as the audit's does: past it a packet is not logged (nor put in
// the set: its next packet is tried again) and its verdict is unchanged.
// Renderer.Verify checks record-deny's rules, as every denied packet of
// the node goes through it.

// RecordGroup is the netfilter log group of recorded connections.
const RecordGroup = 101

// Prefixes of recorded connections, by verdict.
const (
	RecordAllowPrefix = "np-rec:allow:"
	RecordDenyPrefix  = "np-rec:deny:"
)

// RecordWindow is how long the kernel folds the packets of one source,
// destination, protocol and destination port into the line it logged.
const RecordWindow = 10 * time.Second

// recordCapacity bounds each folding set; past it packets are not logged.
const recordCapacity = 65536

const (
	chainRecord      = "record"
	chainRecordAllow = "record-allow"
	chainRecordDeny  = "record-deny"
	setRecordLocal   = "record-local"
	setRecordAllowed = "record-allowed"
	setRecordDenied  = "record-denied"
	recordLimit      = "limit rate 1000/second burst 1000 packets"
)

// recordObjects adds the record chains, the set of the node's pod
// addresses that a recorded connection has at one end, and the folding
// sets.
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
	rs.chains[chainRecordAllow] = recordLog(rs, setRecordAllowed, RecordAllowPrefix, "return")
	rs.chains[chainRecordDeny] = append(recordLog(rs, setRecordDenied, RecordDenyPrefix, "drop"), rule{text: "drop"})
}

// recordLog returns the rules that log a packet to the record once per
// window (its folding set, declared here) with prefix, and end in seen
// for one already logged.
func recordLog(rs *ruleset, set, prefix, seen string) []rule {
	var rules, logs []rule
	for _, f := range []struct{ fam, ip, addr string }{{"4", "ip", "ipv4_addr"}, {"6", "ip6", "ipv6_addr"}} {
		name := set + "-" + f.fam
		rs.sets[name] = &container{typ: f.addr + " . " + f.addr + " . inet_proto . inet_service", dynamic: true,
			timeout: RecordWindow, size: recordCapacity, elements: map[string]string{}, comment: "recorded in the last window"}
		key := f.ip + " saddr . " + f.ip + " daddr . meta l4proto . th dport"
		rules = append(rules, rule{text: fmt.Sprintf("%s @%s %s", key, name, seen)})
		logs = append(logs, rule{text: fmt.Sprintf("meta nfproto ipv%s %s update @%s { %s } log prefix %q group %d", f.fam, recordLimit, name, key, prefix, RecordGroup)})
	}
	return append(rules, logs...)
}
