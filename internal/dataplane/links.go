package dataplane

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// RouteDevice returns the name of the interface that the current network
// namespace routes ip out of: for a pod of this node, the node's end of
// its link, whatever the CNI named it (a veth of ptp, kindnet or Calico
// with a /32 or /128 route, or the bridge of the bridge plugin and
// flannel). The kernel's own route lookup decides, so the answer is the
// interface the pod's packets come in by.
func RouteDevice(ip netip.Addr) (string, error) {
	routes, err := netlink.RouteGet(ip.AsSlice())
	if err != nil {
		return "", fmt.Errorf("route to %s: %w", ip, err)
	}
	if len(routes) == 0 || routes[0].LinkIndex == 0 {
		return "", fmt.Errorf("route to %s: no interface", ip)
	}
	link, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return "", fmt.Errorf("route to %s: interface %d: %w", ip, routes[0].LinkIndex, err)
	}
	return link.Attrs().Name, nil
}
