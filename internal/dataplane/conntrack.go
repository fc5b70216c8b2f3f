package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netpol/netpol/internal/l4"
)

// Conntrack deletes tracked connections of the current network namespace
// over netlink.
type Conntrack struct{}

// Cut deletes the entries (TCP, UDP, SCTP, ICMP, ICMPv6 and every other
// protocol conntrack follows; IPv4 and IPv6) whose connection
// keep rejects, and returns how many it deleted. Each connection is judged
// as the rules judge it: from the original source to the translated
// destination (the reply's source), so a connection to a Service address is
// judged by the backend it reached.
//
// Deleting an entry alone does not cut: the next packet, from either side,
// is new to conntrack and meets the rules, and a packet of the side that
// the policy does not restrict (the server's, say) would be allowed and
// re-create the entry in reverse, after which the other side's packets
// pass as replies. So Cut first hands every connection it will delete to
// hold, which must make the firewall drop their packets in both
// directions. When hold fails (a full set, a refused transaction) the
// entries are deleted all the same and the error returned: a cut without
// the hold still stops every connection whose denied side speaks next,
// where no cut stops none.
func (Conntrack) Cut(ctx context.Context, keep func(l4.Conn) bool, hold func([]l4.Conn) error) (int, error) {
	var holdErr error
	total := 0
	for _, family := range []netlink.InetFamily{unix.AF_INET, unix.AF_INET6} {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, family)
		if err != nil {
			return total, err
		}
		doomed := map[l4.Conn]bool{}
		var conns []l4.Conn
		for _, f := range flows {
			if c, ok := judged(f); ok && !doomed[c] && !keep(c) {
				doomed[c] = true
				conns = append(conns, c)
			}
		}
		if len(conns) == 0 {
			continue
		}
		if err := hold(conns); err != nil {
			holdErr = errors.Join(holdErr, err)
		}
		// A second dump: the library deletes only through a filter. It
		// costs a dump when there is something to cut, never otherwise.
		// The library sends one request per entry (at 100,000 entries
		// about 1 ms each; BENCHMARKS.md): fine for the connections one
		// change cuts, slow for a mass cut.
		n, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, family, filter(doomed))
		total += int(n)
		if err != nil {
			return total, errors.Join(holdErr, err)
		}
	}
	return total, holdErr
}

// filter matches the entries of the connections it holds.
type filter map[l4.Conn]bool

// MatchConntrackFlow reports whether the entry is to be deleted.
func (f filter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	c, ok := judged(flow)
	return ok && f[c]
}

// judged returns the connection of a conntrack entry as the rules see it.
func judged(flow *netlink.ConntrackFlow) (l4.Conn, bool) {
	var proto l4.Protocol
	var number uint8
	switch flow.Forward.Protocol {
	case unix.IPPROTO_TCP:
		proto = l4.TCP
	case unix.IPPROTO_UDP:
		proto = l4.UDP
	case unix.IPPROTO_SCTP:
		proto = l4.SCTP
	case unix.IPPROTO_ICMP:
		proto = l4.ICMP
	case unix.IPPROTO_ICMPV6:
		proto = l4.ICMPv6
	default:
		proto, number = l4.Unported, flow.Forward.Protocol
	}
	src, ok1 := addr(flow.Forward.SrcIP)
	dst, ok2 := addr(flow.Reverse.SrcIP) // after DNAT
	if !ok1 || !ok2 {
		return l4.Conn{}, false
	}
	if proto == l4.ICMP || proto == l4.ICMPv6 || proto == l4.Unported {
		// No ports: the rules that match these are those without any.
		return l4.Conn{Proto: proto, Number: number, Src: netip.AddrPortFrom(src, 0), Dst: netip.AddrPortFrom(dst, 0)}, true
	}
	return l4.Conn{
		Proto: proto,
		Src:   netip.AddrPortFrom(src, flow.Forward.SrcPort),
		Dst:   netip.AddrPortFrom(dst, flow.Reverse.SrcPort),
	}, true
}

// LocalAddrs returns the addresses of the current network namespace's
// interfaces: a connection from one of them is the node's own, which
// leaves by the output hook, where no policy judges.
func LocalAddrs() ([]netip.Addr, error) {
	list, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("listing the node's addresses: %w", err)
	}
	out := make([]netip.Addr, 0, len(list))
	for _, a := range list {
		if ip, ok := addr(a.IP); ok {
			out = append(out, ip)
		}
	}
	return out, nil
}

func addr(ip net.IP) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}
