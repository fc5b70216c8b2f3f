package dnsproxy

import (
	"context"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/netnstest"
)

// TestLabDivertTable writes the divert table and the routing of its mark
// in a namespace of their own, and reads them back with nft and ip.
func TestLabDivertTable(t *testing.T) {
	netnstest.Run(t, func() {
		k := Kernel{Port: 15353, Mark: 0x100000, RouteTable: 153, LogGroup: 153}
		nf, err := knftables.New(knftables.InetFamily, TableName)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		servers := []netip.Addr{netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("fd00::10")}
		clients := []netip.Addr{netip.MustParseAddr("198.18.1.1"), netip.MustParseAddr("198.18.1.2")}
		for range 2 { // written again: replaced whole, not added to
			if err := k.divertTable(ctx, nf, servers, clients); err != nil {
				t.Fatal(err)
			}
		}
		if err := alive(ctx, nf); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("nft", "list", "table", "inet", TableName).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, want := range []string{
			"elements = { 198.18.0.10 }",
			"elements = { fd00::10 }",
			"elements = { 198.18.1.1, 198.18.1.2 }",
			"elements = { 53 expires",
			"type filter hook prerouting priority mangle; policy accept;",
			"type filter hook output priority raw; policy accept;",
			"udp sport 53 ip saddr @servers-4 ip daddr @clients-4 notrack",
			"udp sport 53 ip6 saddr @servers-6 ip6 daddr @clients-6 notrack",
			"meta l4proto udp ct direction reply ct original proto-dst @alive ct original ip daddr @servers-4 ip daddr @clients-4 tproxy ip to :15353 meta mark set 0x00100000 accept",
			"meta l4proto udp ct direction reply ct original proto-dst @alive ct original ip6 daddr @servers-6 ip6 daddr @clients-6 tproxy ip6 to :15353 meta mark set 0x00100000 accept",
			"udp dport 53 ct direction original ip daddr @servers-4 ip saddr @clients-4 log group 153",
			"udp dport 53 ct direction original ip6 daddr @servers-6 ip6 saddr @clients-6 log group 153",
			"type filter hook input priority raw; policy accept;",
			"udp dport 15353 meta mark & 0x00100000 != 0x00100000 drop",
		} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the divert table has no %q:\n%s", want, out)
			}
		}
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil { // as on any node
			t.Fatalf("%v: %s", err, out)
		}
		for range 2 { // a restarted agent finds its routing in place
			if err := k.route(); err != nil {
				t.Fatal(err)
			}
		}
		for _, fam := range []string{"-4", "-6"} {
			rules, _ := exec.Command("ip", fam, "rule").CombinedOutput()
			if n := strings.Count(string(rules), "fwmark 0x100000/0x100000 lookup 153"); n != 1 {
				t.Errorf("ip %s rule has %d rules of the mark, want 1:\n%s", fam, n, rules)
			}
			routes, _ := exec.Command("ip", fam, "route", "show", "table", "153").CombinedOutput()
			if !strings.Contains(string(routes), "local default dev lo") {
				t.Errorf("ip %s route table 153:\n%s\nwant local default dev lo", fam, routes)
			}
		}
		// What route added, unroute removes (the agent stops), and only
		// that: a rule of another mark to the same table stays.
		if out, err := exec.Command("ip", "rule", "add", "fwmark", "0x4000/0x4000", "lookup", "153", "priority", "154").CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if err := k.unroute(); err != nil {
			t.Fatal(err)
		}
		for _, fam := range []string{"-4", "-6"} {
			rules, _ := exec.Command("ip", fam, "rule").CombinedOutput()
			routes, _ := exec.Command("ip", fam, "route", "show", "table", "153").CombinedOutput()
			if strings.Contains(string(rules), "0x100000") || len(strings.TrimSpace(string(routes))) != 0 {
				t.Errorf("after unroute, ip %s rule:\n%s\nroute table 153:\n%s\nwant neither the mark's rule nor a route", fam, rules, routes)
			}
		}
		if rules, _ := exec.Command("ip", "-4", "rule").CombinedOutput(); !strings.Contains(string(rules), "fwmark 0x4000/0x4000 lookup 153") {
			t.Errorf("unroute removed another mark's rule:\n%s", rules)
		}
		if err := k.unroute(); err != nil { // nothing left: no error
			t.Errorf("unroute again: %v", err)
		}
	})
}

// TestAdversarialDefaultMarkLeftAloneByCNIs: every packet with the
// divert's mark is routed to the node itself, so the default must be a
// bit no common component sets or matches: kube-proxy (0x4000, 0x8000),
// Calico (its default mask 0xffff0000), Cilium (0x0f00, and identities
// in 0xffff0000), Istio's TPROXY (0x539), AWS VPC CNI (0x80), Weave
// (0x20000, 0x40000).
func TestAdversarialDefaultMarkLeftAloneByCNIs(t *testing.T) {
	m := DefaultKernel.Mark
	if m == 0 || m&(m-1) != 0 {
		t.Errorf("default mark %#x: want one bit", m)
	}
	for who, bits := range map[string]uint32{"kube-proxy": 0x4000 | 0x8000, "Calico": 0xffff0000, "Cilium": 0x0f00 | 0xffff0000,
		"Istio": 0x539, "AWS VPC CNI": 0x80, "Weave": 0x20000 | 0x40000} {
		if m&bits != 0 {
			t.Errorf("default mark %#x is among %s's bits %#x", m, who, bits)
		}
	}
}
