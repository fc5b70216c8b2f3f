package nft

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/l4"
)

// The cut sets hold connections whose conntrack entries the agent deleted
// because a policy change denies them (dataplane.Conntrack.Cut). Without
// them a cut does not hold: the next packet of the side that no policy
// restricts (a server that speaks first, any UDP reply) is new to
// conntrack, passes, and re-creates the entry in reverse, and the denied
// side's packets then pass as its replies. The base chains drop every
// packet of a held connection in either direction, before any policy
// looks at it, and each such packet keeps the hold alive (update), so a
// peer that keeps sending never outlives it; CutHold after the last packet
// the element expires, and a later connection on the same ports is judged
// by the rules like any new one. The agent releases held connections that
// a later change allows again. The sets are the kernel's, not the
// renderer's: syncs and restarts keep their elements.
const (
	cutSet4 = "cut-4"
	cutSet6 = "cut-6"
	// cutPairs4 and cutPairs6 hold by address pair and protocol what the
	// cut sets have no room for (see Hold).
	cutPairs4 = "cut-pairs-4"
	cutPairs6 = "cut-pairs-6"
	// CutHold is how long a held connection stays held after its last
	// packet. A TCP peer retransmits at most two minutes apart (Linux's
	// TCP_RTO_MAX), so one that keeps trying stays held; a 5-tuple used
	// again later than this is judged by the rules as a new connection.
	CutHold = 2 * time.Minute
	// CutCapacity bounds each cut set and each pair set: the kernel
	// memory that holds take is bounded whatever a change cuts.
	CutCapacity = 65536
)

// cutSets are the sets whose elements are the kernel's and the agent's
// holds, never the renderer's.
var cutSets = []string{cutSet4, cutSet6, cutPairs4, cutPairs6}

func isCutSet(name string) bool { return slices.Contains(cutSets, name) }

// writeCutSets declares the cut sets; adding a set that exists keeps its
// elements.
func writeCutSets(tx ops) {
	for _, s := range []struct{ name, typ, comment string }{
		{cutSet4, "ipv4_addr . ipv4_addr . inet_proto . inet_service . inet_service", "connections cut by a policy change: dropped both ways"},
		{cutSet6, "ipv6_addr . ipv6_addr . inet_proto . inet_service . inet_service", "connections cut by a policy change: dropped both ways"},
		{cutPairs4, "ipv4_addr . ipv4_addr . inet_proto", "cut connections past the cut set's room: their address pair and protocol dropped both ways"},
		{cutPairs6, "ipv6_addr . ipv6_addr . inet_proto", "cut connections past the cut set's room: their address pair and protocol dropped both ways"},
	} {
		tx.Add(&knftables.Set{
			Name:    s.name,
			Type:    s.typ,
			Flags:   []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag},
			Timeout: knftables.PtrTo(CutHold),
			Size:    knftables.PtrTo(uint64(CutCapacity)),
			Comment: knftables.PtrTo(s.comment),
		})
	}
}

// cutRules drop the packets of held connections, the way they were cut
// (source . destination) and the other way (a reply, or the other side
// speaking first).
func cutRules() []string {
	var rules []string
	for _, f := range []struct{ set, pairs, ip string }{{cutSet4, cutPairs4, "ip"}, {cutSet6, cutPairs6, "ip6"}} {
		forward := f.ip + " saddr . " + f.ip + " daddr . meta l4proto . th sport . th dport"
		reverse := f.ip + " daddr . " + f.ip + " saddr . meta l4proto . th dport . th sport"
		for _, key := range []string{forward, reverse} {
			rules = append(rules, key+" @"+f.set+" update @"+f.set+" { "+key+" } drop")
		}
		forward = f.ip + " saddr . " + f.ip + " daddr . meta l4proto"
		reverse = f.ip + " daddr . " + f.ip + " saddr . meta l4proto"
		for _, key := range []string{forward, reverse} {
			rules = append(rules, key+" @"+f.pairs+" update @"+f.pairs+" { "+key+" } drop")
		}
	}
	return rules
}

func writeCutRules(tx ops, chain string) {
	for _, rule := range cutRules() {
		tx.Add(&knftables.Rule{Chain: chain, Rule: rule})
	}
}

// The hold a cut connection needs, by protocol: TCP, UDP and SCTP by
// 5-tuple; other protocols conntrack follows without ports (GRE, ESP:
// either side's packet can start an entry) by address pair and protocol,
// which is their conntrack tuple anyway. A ping needs none: conntrack takes
// only a request as a new connection, so a reply after the cut re-creates
// nothing, and the next request meets the rules.
func exactHold(p l4.Protocol) bool { return p == l4.TCP || p == l4.UDP || p == l4.SCTP }

func pairHold(p l4.Protocol) bool { return exactHold(p) || p == l4.Unported }

// Hold adds connections to the cut sets, so that the firewall drops their
// packets both ways once their conntrack entries are gone. What a cut set
// has no room for (past CutCapacity in one call, or a set that earlier
// holds filled) is held by address pair and protocol instead: a denied
// connection is never cut without a hold, at the price of denying, while
// its peers keep talking, other connections of the same pair and protocol
// too.
func (r *Renderer) Hold(ctx context.Context, conns []l4.Conn) error {
	var exact, pairs []*knftables.Element
	n := map[string]int{}
	for _, c := range conns {
		switch set := cutSetOf(c); {
		case exactHold(c.Proto) && n[set] < CutCapacity:
			n[set]++
			exact = append(exact, cutElement(c))
		case pairHold(c.Proto):
			pairs = append(pairs, pairElement(c))
		}
	}
	err := r.runElements(ctx, append(exact, pairs...), false)
	if err == nil || len(exact) == 0 {
		return err
	}
	pairs = pairs[:0]
	for _, c := range conns {
		if pairHold(c.Proto) {
			pairs = append(pairs, pairElement(c))
		}
	}
	if perr := r.runElements(ctx, pairs, false); perr != nil {
		return errors.Join(err, perr)
	}
	return nil
}

// Release takes connections out of the cut sets (a later change allows
// them again). Connections that are not held are no error.
func (r *Renderer) Release(ctx context.Context, conns []l4.Conn) error {
	var els []*knftables.Element
	for _, c := range conns {
		if exactHold(c.Proto) {
			els = append(els, cutElement(c))
		}
	}
	return r.runElements(ctx, els, true)
}

// ReleasePairs takes the address pairs and protocols of conns out of the
// pair sets: the caller knows that no connection of theirs is denied any
// more.
func (r *Renderer) ReleasePairs(ctx context.Context, conns []l4.Conn) error {
	var els []*knftables.Element
	for _, c := range conns {
		if pairHold(c.Proto) {
			els = append(els, pairElement(c))
		}
	}
	return r.runElements(ctx, els, true)
}

func cutSetOf(c l4.Conn) string {
	if c.Src.Addr().Is6() {
		return cutSet6
	}
	return cutSet4
}

func cutElement(c l4.Conn) *knftables.Element {
	return &knftables.Element{Set: cutSetOf(c), Key: []string{
		c.Src.Addr().String(), c.Dst.Addr().String(), protoName(c.Proto),
		strconv.Itoa(int(c.Src.Port())), strconv.Itoa(int(c.Dst.Port())),
	}}
}

func pairElement(c l4.Conn) *knftables.Element {
	set := cutPairs4
	if c.Src.Addr().Is6() {
		set = cutPairs6
	}
	proto := protoName(c.Proto)
	if c.Proto == l4.Unported {
		proto = strconv.Itoa(int(c.Number))
	}
	return &knftables.Element{Set: set, Key: []string{c.Src.Addr().String(), c.Dst.Addr().String(), proto}}
}

func (r *Renderer) runElements(ctx context.Context, els []*knftables.Element, release bool) error {
	if len(els) == 0 {
		return nil
	}
	tx := r.nft.NewTransaction()
	for _, e := range els {
		// Adding an element that exists is no error, deleting one that is
		// absent (expired) is: add first, so that release always succeeds.
		tx.Add(e)
		if release {
			tx.Delete(e)
		}
	}
	return r.nft.Run(ctx, tx)
}

// Learned returns what the kernel's domain sets hold now, by DomainSet
// name: the addresses the rules match for domainNames peers, for a cut
// that decides as the rules do.
func (r *Renderer) Learned(ctx context.Context, sets []*compile.DomainSet) (map[string]map[netip.Addr]bool, error) {
	out := make(map[string]map[netip.Addr]bool, len(sets))
	for _, s := range sets {
		out[s.Name] = map[netip.Addr]bool{}
		for _, name := range []string{s.Name + "-4", s.Name + "-6"} {
			els, err := r.nft.ListElements(ctx, "set", name)
			if knftables.IsNotFound(err) {
				continue
			}
			if err != nil {
				return out, fmt.Errorf("listing domain set %s: %w", name, err)
			}
			for _, e := range els {
				if len(e.Key) == 1 {
					if a, err := netip.ParseAddr(e.Key[0]); err == nil {
						out[s.Name][a] = true
					}
				}
			}
		}
	}
	return out, nil
}

// Held lists the connections the cut sets hold: a restarted agent learns
// them, to release those that a later change allows again.
func (r *Renderer) Held(ctx context.Context) ([]l4.Conn, error) {
	var out []l4.Conn
	for _, set := range []string{cutSet4, cutSet6} {
		els, err := r.nft.ListElements(ctx, "set", set)
		if knftables.IsNotFound(err) {
			continue
		}
		if err != nil {
			return out, err
		}
		for _, e := range els {
			if c, ok := parseHeld(e.Key); ok {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// parseHeld reads a cut set element's key: source, destination, protocol,
// source port, destination port.
func parseHeld(key []string) (l4.Conn, bool) {
	if len(key) == 1 {
		key = strings.Split(key[0], " . ")
	}
	if len(key) != 5 {
		return l4.Conn{}, false
	}
	src, err1 := netip.ParseAddr(key[0])
	dst, err2 := netip.ParseAddr(key[1])
	proto, err3 := l4.ParseProtocol(key[2])
	sport, err4 := strconv.ParseUint(key[3], 10, 16)
	dport, err5 := strconv.ParseUint(key[4], 10, 16)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return l4.Conn{}, false
	}
	return l4.Conn{Proto: proto, Src: netip.AddrPortFrom(src, uint16(sport)), Dst: netip.AddrPortFrom(dst, uint16(dport))}, true
}
