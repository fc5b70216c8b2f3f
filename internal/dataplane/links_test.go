package dataplane_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/netnstest"
)

// TestLabAdversarialRouteDevices: a pod's interface is the one the most
// specific route of its address leads to: a /32 to a veth (ptp, kindnet,
// Calico) or a subnet on a bridge (the bridge plugin, flannel); an address
// that no route of the namespace leads anywhere has none.
func TestLabAdversarialRouteDevices(t *testing.T) {
	netnstest.Run(t, func() {
		for _, l := range []netlink.Link{
			&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth1"}, PeerName: "peer1"},
			&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "cni0"}},
		} {
			if err := netlink.LinkAdd(l); err != nil {
				t.Fatal(err)
			}
			if err := netlink.LinkSetUp(l); err != nil {
				t.Fatal(err)
			}
		}
		for dst, dev := range map[string]string{"198.18.1.5/32": "veth1", "198.18.2.0/24": "cni0", "198.18.2.9/32": "veth1", "fd00:198:18:2::/64": "cni0"} {
			link, err := netlink.LinkByName(dev)
			if err != nil {
				t.Fatal(err)
			}
			_, ipnet, _ := net.ParseCIDR(dst)
			if err := netlink.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: ipnet, Scope: netlink.SCOPE_LINK}); err != nil {
				t.Fatalf("route %s dev %s: %v", dst, dev, err)
			}
		}
		a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
		got, err := dataplane.RouteDevices([]netip.Addr{a("198.18.1.5"), a("198.18.2.7"), a("198.18.2.9"), a("fd00:198:18:2::7"), a("198.18.3.1")})
		if err != nil {
			t.Fatal(err)
		}
		want := map[netip.Addr]string{a("198.18.1.5"): "veth1", a("198.18.2.7"): "cni0", a("198.18.2.9"): "veth1", a("fd00:198:18:2::7"): "cni0"}
		if len(got) != len(want) {
			t.Errorf("got %v, want %v", got, want)
		}
		for ip, dev := range want {
			if got[ip] != dev {
				t.Errorf("%s: %q, want %q", ip, got[ip], dev)
			}
		}
	})
}
