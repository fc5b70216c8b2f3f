package dnsproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/dataplane/nflog"
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
	// LogGroup is the NFLOG group that pods' queries are logged to, so
	// that an answer teaches only when it answers one (queries.go).
	LogGroup uint16
}

// DefaultKernel are the agent flags' defaults. The mark must be a bit that
// no other component sets or matches on the node, since every packet that
// carries it is routed to the node itself: kube-proxy uses 0x4000 and
// 0x8000; Calico the mask 0xffff0000 (its default); Cilium 0x0f00 and the
// upper 16 bits (identities); Istio's TPROXY 0x539; AWS VPC CNI 0x80;
// Weave 0x20000 and 0x40000; wg-quick 0xca6c as a whole value. 0x2000 is
// none of those. The NFLOG groups 100 and 101 are the audit log's and the
// record's (render/nft); Calico's flow logs use 1 and 2.
var DefaultKernel = Kernel{Port: 15353, Mark: 0x2000, RouteTable: 153, LogGroup: 153}

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

// unroute removes what route added: the rules of the mark, for both
// families, and the table's local routes. Run calls it when it stops (a
// DaemonSet deleted, or an agent upgraded, stops with SIGTERM).
func (k Kernel) unroute() error {
	var errs []error
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		rules, err := netlink.RuleList(fam)
		if err != nil {
			errs = append(errs, fmt.Errorf("routing rules: %w", err))
			continue
		}
		for _, r := range rules {
			if r.Mark == k.Mark && r.Mask != nil && *r.Mask == k.Mark && r.Table == k.RouteTable {
				if err := netlink.RuleDel(&r); err != nil && !errors.Is(err, syscall.ENOENT) {
					errs = append(errs, fmt.Errorf("routing rule fwmark %#x lookup %d: %w", k.Mark, k.RouteTable, err))
				}
			}
		}
		routes, err := netlink.RouteListFiltered(fam, &netlink.Route{Table: k.RouteTable}, netlink.RT_FILTER_TABLE)
		if err != nil {
			errs = append(errs, fmt.Errorf("routes of table %d: %w", k.RouteTable, err))
			continue
		}
		for _, r := range routes {
			if r.Type != unix.RTN_LOCAL {
				continue // not one of ours
			}
			if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("local route in table %d: %w", k.RouteTable, err))
			}
		}
	}
	return errors.Join(errs...)
}

// openLog opens the log of the pods' queries.
func (k Kernel) openLog() (*nflog.Reader, error) {
	r, err := nflog.OpenPayload(k.LogGroup, queryCopy)
	if err != nil {
		return nil, fmt.Errorf("DNS query log (NFLOG group %d): %w", k.LogGroup, err)
	}
	return r, nil
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
	tx.Add(&knftables.Element{Set: "alive", Key: []string{strconv.Itoa(dnsPort)}})
	prerouting, filter, mangle, accept := knftables.PreroutingHook, knftables.FilterType, knftables.ManglePriority, knftables.AcceptPolicy
	tx.Add(&knftables.Chain{Name: "divert", Type: &filter, Hook: &prerouting, Priority: &mangle, Policy: &accept})
	for _, ip := range []string{"ip", "ip6"} {
		fam := "4"
		if ip == "ip6" {
			fam = "6"
		}
		// Before kube-proxy's translation (dstnat), so the query is still
		// addressed as the pod asked it.
		tx.Add(&knftables.Rule{Chain: "divert", Rule: fmt.Sprintf(
			"udp dport %d ct direction original %s daddr @servers-%s %s saddr @clients-%s log group %d",
			dnsPort, ip, fam, ip, fam, k.LogGroup),
			Comment: knftables.PtrTo("queries of pods that domainNames rules govern: an answer teaches only if it answers one")})
		// tproxy before the mark: without a socket on the port (the agent
		// died) tproxy does not match, and the answer goes on unmarked, to
		// the pod. The answer is recognised by its connection, which the
		// pod began to the Service's port: it still comes from the
		// backend's port (1053, 5353, ...) here, before the translation is
		// undone.
		tx.Add(&knftables.Rule{Chain: "divert", Rule: fmt.Sprintf(
			"meta l4proto udp ct direction reply ct original proto-dst @alive ct original %s daddr @servers-%s %s daddr @clients-%s tproxy %s to :%d meta mark set %#x accept",
			ip, fam, ip, fam, ip, k.Port, k.Mark),
			Comment: knftables.PtrTo("answers of the cluster DNS to pods that domainNames rules govern")})
	}
	// The socket reads only what the rule above diverts: anything else
	// addressed to its port, over any address of the node (link-local
	// too), from a pod or from the node, is dropped before it.
	input, raw := knftables.InputHook, knftables.RawPriority
	tx.Add(&knftables.Chain{Name: "guard", Type: &filter, Hook: &input, Priority: &raw, Policy: &accept})
	tx.Add(&knftables.Rule{Chain: "guard", Rule: fmt.Sprintf("udp dport %d meta mark & %#x != %#x drop", k.Port, k.Mark, k.Mark),
		Comment: knftables.PtrTo("the proxy's port takes diverted answers only")})
	// The answer the proxy sends on (from the server's address, after the
	// kernel undid the Service translation) is no connection of its own:
	// tracked, it would clash with the pod's query's entry and be dropped.
	output := knftables.OutputHook
	tx.Add(&knftables.Chain{Name: "answer", Type: &filter, Hook: &output, Priority: &raw, Policy: &accept})
	for _, ip := range []string{"ip", "ip6"} {
		fam := "4"
		if ip == "ip6" {
			fam = "6"
		}
		tx.Add(&knftables.Rule{Chain: "answer", Rule: fmt.Sprintf("udp sport %d %s saddr @servers-%s %s daddr @clients-%s notrack", dnsPort, ip, fam, ip, fam),
			Comment: knftables.PtrTo("the proxy sending a held answer on")})
	}
	return nf.Run(ctx, tx)
}

// alive says the proxy is alive for another aliveTimeout. An element that
// is there already would keep its old timeout on a kernel before 6.x, so
// it is deleted and added again, in one transaction.
func alive(ctx context.Context, nf knftables.Interface) error {
	tx := nf.NewTransaction()
	e := &knftables.Element{Set: "alive", Key: []string{strconv.Itoa(dnsPort)}}
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
