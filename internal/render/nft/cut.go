package nft

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/knftables"

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
	// CutHold is how long a held connection stays held after its last
	// packet. A TCP peer retransmits at most two minutes apart (Linux's
	// TCP_RTO_MAX), so one that keeps trying stays held; a 5-tuple used
	// again later than this is judged by the rules as a new connection.
	CutHold = 2 * time.Minute
	// CutCapacity bounds each cut set: a change that cuts more connections
	// of one family holds the first CutCapacity of them; the conntrack
	// entries of all go (dataplane.Conntrack.Cut).
	CutCapacity = 65536
)

func isCutSet(name string) bool { return name == cutSet4 || name == cutSet6 }

// writeCutSets declares the cut sets; adding a set that exists keeps its
// elements.
func writeCutSets(tx ops) {
	for _, s := range []struct{ name, addr string }{{cutSet4, "ipv4_addr"}, {cutSet6, "ipv6_addr"}} {
		tx.Add(&knftables.Set{
			Name:    s.name,
			Type:    s.addr + " . " + s.addr + " . inet_proto . inet_service . inet_service",
			Flags:   []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag},
			Timeout: knftables.PtrTo(CutHold),
			Size:    knftables.PtrTo(uint64(CutCapacity)),
			Comment: knftables.PtrTo("connections cut by a policy change: dropped both ways"),
		})
	}
}

// cutRules drop the packets of held connections, the way they were cut
// (source . destination) and the other way (a reply, or the other side
// speaking first).
func cutRules() []string {
	var rules []string
	for _, f := range []struct{ set, ip string }{{cutSet4, "ip"}, {cutSet6, "ip6"}} {
		forward := f.ip + " saddr . " + f.ip + " daddr . meta l4proto . th sport . th dport"
		reverse := f.ip + " daddr . " + f.ip + " saddr . meta l4proto . th dport . th sport"
		for _, key := range []string{forward, reverse} {
			rules = append(rules, key+" @"+f.set+" update @"+f.set+" { "+key+" } drop")
		}
	}
	return rules
}

func writeCutRules(tx ops, chain string) {
	for _, rule := range cutRules() {
		tx.Add(&knftables.Rule{Chain: chain, Rule: rule})
	}
}

// Hold adds connections to the cut sets (the first CutCapacity of each
// family), so that the firewall drops their packets both ways once their
// conntrack entries are gone.
func (r *Renderer) Hold(ctx context.Context, conns []l4.Conn) error {
	return r.cutElements(ctx, conns, false)
}

// Release takes connections out of the cut sets (a later change allows
// them again). Connections that are not held are no error.
func (r *Renderer) Release(ctx context.Context, conns []l4.Conn) error {
	return r.cutElements(ctx, conns, true)
}

func (r *Renderer) cutElements(ctx context.Context, conns []l4.Conn, release bool) error {
	if len(conns) == 0 {
		return nil
	}
	tx := r.nft.NewTransaction()
	n := map[string]int{}
	for _, c := range conns {
		set := cutSet4
		if c.Src.Addr().Is6() {
			set = cutSet6
		}
		if n[set] == CutCapacity {
			continue
		}
		n[set]++
		e := &knftables.Element{Set: set, Key: []string{
			c.Src.Addr().String(), c.Dst.Addr().String(), protoName(c.Proto),
			strconv.Itoa(int(c.Src.Port())), strconv.Itoa(int(c.Dst.Port())),
		}}
		// Adding an element that exists is no error, deleting one that is
		// absent (expired) is: add first, so that release always succeeds.
		tx.Add(e)
		if release {
			tx.Delete(e)
		}
	}
	return r.nft.Run(ctx, tx)
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
