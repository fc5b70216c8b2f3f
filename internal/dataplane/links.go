package dataplane

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// RouteDevices returns, for each address of ips that the current network
// namespace's main routing table routes, the name of the interface it
// routes it out of: for a pod of this node, the node's end of its link,
// whatever the CNI named it (a veth of ptp, kindnet or Calico with a /32
// or /128 route, or the bridge of the bridge plugin and flannel, with the
// pod subnet's route). The most specific route decides, as the kernel's
// lookup does in the main table. One dump of the routes and one of the
// links, whatever the number of addresses: the agent asks at every pass.
func RouteDevices(ips []netip.Addr) (map[netip.Addr]string, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing interfaces: %w", err)
	}
	names := make(map[int]string, len(links))
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	type route struct {
		dst  netip.Prefix
		link int
	}
	var routes []route
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		list, err := netlink.RouteList(nil, family)
		if err != nil {
			return nil, fmt.Errorf("listing routes: %w", err)
		}
		for _, r := range list {
			if r.LinkIndex == 0 {
				continue // multipath or unreachable: no one interface
			}
			dst := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
			if family == netlink.FAMILY_V6 {
				dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
			}
			if r.Dst != nil {
				a, ok := netip.AddrFromSlice(r.Dst.IP)
				ones, _ := r.Dst.Mask.Size()
				if !ok {
					continue
				}
				dst = netip.PrefixFrom(a.Unmap(), ones)
			}
			routes = append(routes, route{dst.Masked(), r.LinkIndex})
		}
	}
	out := make(map[netip.Addr]string, len(ips))
	for _, ip := range ips {
		best := -1
		for _, r := range routes {
			if r.dst.Bits() > best && r.dst.Contains(ip) {
				best = r.dst.Bits()
				out[ip] = names[r.link]
			}
		}
	}
	return out, nil
}
