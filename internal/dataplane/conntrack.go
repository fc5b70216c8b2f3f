// Package dataplane is the bottom of DESIGN.md's data flow: the kernel
// pieces below the rules that nft loads. Conntrack cuts connections that a
// policy change denies; Elements writes set and map elements over netlink,
// where nft is too slow for one element. It imports l4 and netlink only.
package dataplane

import (
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netpol/netpol/internal/l4"
)

// Conntrack deletes tracked connections of the current network namespace
// over netlink.
type Conntrack struct{}

// Cut walks the IPv4 and IPv6 conntrack tables and deletes every entry
// (TCP, UDP, SCTP) whose original direction keep rejects. Once the entry is
// gone, the connection's next packet is new to the firewall and meets the
// rules, which drop it.
func (Conntrack) Cut(keep func(src, dst netip.Addr, port l4.Port) bool) (int, error) {
	total := 0
	for _, family := range []netlink.InetFamily{unix.AF_INET, unix.AF_INET6} {
		n, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, family, filter{keep})
		total += int(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

type filter struct {
	keep func(src, dst netip.Addr, port l4.Port) bool
}

// MatchConntrackFlow reports whether the entry is to be deleted.
func (f filter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	var proto l4.Protocol
	switch flow.Forward.Protocol {
	case unix.IPPROTO_TCP:
		proto = l4.TCP
	case unix.IPPROTO_UDP:
		proto = l4.UDP
	case unix.IPPROTO_SCTP:
		proto = l4.SCTP
	default:
		return false
	}
	src, ok1 := addr(flow.Forward.SrcIP)
	dst, ok2 := addr(flow.Forward.DstIP)
	if !ok1 || !ok2 {
		return false
	}
	return !f.keep(src, dst, l4.Port{Proto: proto, Num: flow.Forward.DstPort})
}

func addr(ip net.IP) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}
