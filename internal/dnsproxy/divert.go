package dnsproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"
)

// TableName is the nftables table (family inet) that diverts answers. It
// is the proxy's alone, apart from the policy table: its rules change with
// the DNS servers and the pods, and the agent's renderer never sees it.
const TableName = "netpol-dns"

// Kernel names the pieces of the kernel the proxy uses: a port on the node
// that answers are delivered to, and the packet mark and routing table
// that deliver them there (TPROXY keeps their addresses, so routing must
// be told that they are local: "ip rule fwmark MARK lookup TABLE" with a
// "local default dev lo" route in TABLE, for both families).
type Kernel struct {
	Port       uint16
	Mark       uint32 // a bit kube-proxy and the CNI leave alone
	RouteTable int
}

// DefaultKernel are the agent flags' defaults. kube-proxy uses the marks
// 0x4000 and 0x8000, Calico the upper 16 bits, Cilium 0x0f00 and 0x0200:
// 0x00100000 is none of those.
var DefaultKernel = Kernel{Port: 15353, Mark: 0x00100000, RouteTable: 153}

// rulePriority places the mark's routing rule ahead of the main table
// (32766) and behind the local table (0).
const rulePriority = 153

// aliveTimeout is how long the divert rule keeps matching after the proxy
// last said it is alive; the proxy says so every aliveEvery.
const (
	aliveTimeout = 5 * time.Second
	aliveEvery   = time.Second
)

// route makes packets with the mark local, for both families; it is
// idempotent (a restarted agent finds its rules in place).
func (k Kernel) route() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		dst := &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}
		if fam == unix.AF_INET6 {
			dst = &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
		}
		r := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: dst, Table: k.RouteTable, Type: unix.RTN_LOCAL,
			Scope: netlink.SCOPE_HOST, Family: fam}
		if err := netlink.RouteReplace(r); err != nil {
			return fmt.Errorf("local route in table %d: %w", k.RouteTable, err)
		}
		rules, err := netlink.RuleList(fam)
		if err != nil {
			return fmt.Errorf("routing rules: %w", err)
		}
		mask := k.Mark
		if slices.ContainsFunc(rules, func(r netlink.Rule) bool {
			return r.Mark == k.Mark && r.Mask != nil && *r.Mask == mask && r.Table == k.RouteTable
		}) {
			continue
		}
		rule := netlink.NewRule()
		rule.Family, rule.Mark, rule.Mask, rule.Table, rule.Priority = fam, k.Mark, &mask, k.RouteTable, rulePriority
		if err := netlink.RuleAdd(rule); err != nil && !errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("routing rule fwmark %#x lookup %d: %w", k.Mark, k.RouteTable, err)
		}
	}
	return nil
}

// divertTable writes the whole divert table in one transaction: the DNS
// servers whose answers are held, the pods they are held for, the alive
// gate (set again, fresh), and the rule.
func (k Kernel) divertTable(ctx context.Context, nf knftables.Interface, servers, clients []netip.Addr) error {
	tx := nf.NewTransaction()
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("netpol: DNS answers held until domainNames sets learn them")})
	tx.Delete(&knftables.Table{}) // whatever was there goes: the rest of tx is all of it
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("netpol: DNS answers held until domainNames sets learn them")})
	for _, fam := range []string{"4", "6"} {
		typ := "ipv4_addr"
		if fam == "6" {
			typ = "ipv6_addr"
		}
		tx.Add(&knftables.Set{Name: "servers-" + fam, Type: typ})
		tx.Add(&knftables.Set{Name: "clients-" + fam, Type: typ})
	}
	timeout := aliveTimeout
	tx.Add(&knftables.Set{Name: "alive", Type: "inet_service", Flags: []knftables.SetFlag{knftables.TimeoutFlag}, Timeout: &timeout,
		Comment: knftables.PtrTo("the proxy is alive while 53 is here; it adds it again every second")})
	for _, a := range servers {
		tx.Add(&knftables.Element{Set: "servers-" + family(a), Key: []string{a.String()}})
	}
	for _, a := range clients {
		tx.Add(&knftables.Element{Set: "clients-" + family(a), Key: []string{a.String()}})
	}
	tx.Add(&knftables.Element{Set: "alive", Key: []string{"53"}})
	prerouting, filter, mangle, accept := knftables.PreroutingHook, knftables.FilterType, knftables.ManglePriority, knftables.AcceptPolicy
	tx.Add(&knftables.Chain{Name: "divert", Type: &filter, Hook: &prerouting, Priority: &mangle, Policy: &accept})
	// tproxy before the mark: without a socket on the port (the agent
	// died) tproxy does not match, and the answer goes on unmarked, to
	// the pod.
	for _, ip := range []string{"ip", "ip6"} {
		fam := "4"
		if ip == "ip6" {
			fam = "6"
		}
		tx.Add(&knftables.Rule{Chain: "divert", Rule: fmt.Sprintf(
			"udp sport @alive ct direction reply ct original %s daddr @servers-%s %s daddr @clients-%s tproxy %s to :%d meta mark set %#x accept",
			ip, fam, ip, fam, ip, k.Port, k.Mark),
			Comment: knftables.PtrTo("answers of the cluster DNS to pods that domainNames rules govern")})
	}
	// The answer the proxy sends on (from the server's address, after the
	// kernel undid the Service translation) is no connection of its own:
	// tracked, it would clash with the pod's query's entry and be dropped.
	output, raw := knftables.OutputHook, knftables.RawPriority
	tx.Add(&knftables.Chain{Name: "answer", Type: &filter, Hook: &output, Priority: &raw, Policy: &accept})
	for _, ip := range []string{"ip", "ip6"} {
		fam := "4"
		if ip == "ip6" {
			fam = "6"
		}
		tx.Add(&knftables.Rule{Chain: "answer", Rule: fmt.Sprintf("udp sport 53 %s saddr @servers-%s %s daddr @clients-%s notrack", ip, fam, ip, fam),
			Comment: knftables.PtrTo("the proxy sending a held answer on")})
	}
	return nf.Run(ctx, tx)
}

// alive says the proxy is alive for another aliveTimeout. An element that
// is there already would keep its old timeout on a kernel before 6.x, so
// it is deleted and added again, in one transaction.
func alive(ctx context.Context, nf knftables.Interface) error {
	tx := nf.NewTransaction()
	e := &knftables.Element{Set: "alive", Key: []string{"53"}}
	tx.Add(e)
	tx.Delete(e)
	tx.Add(e)
	return nf.Run(ctx, tx)
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "4"
	}
	return "6"
}
