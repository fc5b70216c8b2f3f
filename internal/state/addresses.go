package state

import (
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// Address plan for objects that come without addresses, all inside the
// benchmark range 198.18.0.0/15 and the ULA range fd00::/8 so that a lab can
// use them for real:
//
//	pods   198.18.1.0 – 198.19.254.255, fd00:198:18::/64
//	nodes  198.19.255.1 – 198.19.255.254, fd00:198:19::/64
//
// A pod's address is derived from a hash of namespace/name, so it does not
// move when other pods come and go; collisions probe to the next free one.
var (
	podV4First  = netip.MustParseAddr("198.18.1.0")
	podV4Count  = uint32(2*65536 - 512)
	nodeV4First = netip.MustParseAddr("198.19.255.1")
	nodeV4Count = uint32(254)
	podV6Prefix = netip.MustParseAddr("fd00:198:18::")
	nodeV6Pref  = netip.MustParseAddr("fd00:198:19::")
)

func (b *builder) assignAddresses() {
	used := make(map[netip.Addr]bool, 2*(len(b.c.Pods)+len(b.c.Nodes))) // most get two
	for _, n := range b.c.Nodes {
		for _, ip := range n.IPs {
			used[ip] = true
		}
	}
	for _, p := range b.c.Pods {
		for _, ip := range p.IPs {
			used[ip] = true
		}
	}
	nodes := append([]*Node(nil), b.c.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		if len(n.IPs) > 0 {
			continue
		}
		h := hash64("node/" + n.Name)
		if ip, ok := allocV4(used, nodeV4First, nodeV4Count, uint32(h)); ok {
			n.IPs = append(n.IPs, ip)
		}
		n.IPs = append(n.IPs, allocV6(used, nodeV6Pref, h))
	}
	// The pods without addresses take theirs in the order of their keys:
	// which one probes on at a collision must not depend on the input.
	type keyed struct {
		key string
		pod *Pod
	}
	var pods []keyed
	for _, p := range b.c.Pods {
		switch {
		case len(p.IPs) > 0:
		case p.HostNetwork:
			// A host-network pod has its node's addresses.
			if n := b.c.nodes[p.Node]; n != nil {
				p.IPs = append(p.IPs, n.IPs...)
			}
		default:
			pods = append(pods, keyed{p.Key(), p})
		}
	}
	slices.SortFunc(pods, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for _, k := range pods {
		h := hash64("pod/", k.key)
		if ip, ok := allocV4(used, podV4First, podV4Count, uint32(h)); ok {
			k.pod.IPs = append(k.pod.IPs, ip)
		}
		k.pod.IPs = append(k.pod.IPs, allocV6(used, podV6Prefix, h))
	}
}

func allocV4(used map[netip.Addr]bool, first netip.Addr, count, h uint32) (netip.Addr, bool) {
	base := first.As4()
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	off := h % count
	for i := uint32(0); i < count; i++ {
		v := start + (off+i)%count
		ip := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		if !used[ip] {
			used[ip] = true
			return ip, true
		}
	}
	return netip.Addr{}, false // the range is full: the pod gets IPv6 only
}

func allocV6(used map[netip.Addr]bool, prefix netip.Addr, h uint64) netip.Addr {
	b := prefix.As16()
	for {
		for i := 0; i < 8; i++ {
			b[8+i] = byte(h >> (56 - 8*i))
		}
		ip := netip.AddrFrom16(b)
		if !used[ip] {
			used[ip] = true
			return ip
		}
		h++
	}
}
