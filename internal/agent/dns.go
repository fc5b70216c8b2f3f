package agent

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dnsproxy"
	"github.com/netpol/netpol/internal/engine"
)

// DNSLearner learns the addresses of domainNames rules from the DNS
// answers local pods receive (dnsproxy.Proxy): after every pass the agent
// tells it which servers' answers to hold, for which pods, and the domain
// sets to learn into.
type DNSLearner interface {
	Update(ctx context.Context, s dnsproxy.Scope) error
	Stats() dnsproxy.Stats
	NamesOf(netip.Addr) []string        // the names whose answers taught an address
	Collectors() []prometheus.Collector // its own metrics
}

// clusterDNS is the Service whose addresses pods resolve through when
// Config.DNSServers names none: CoreDNS keeps kube-dns's name for it.
const clusterDNSNamespace, clusterDNSName = "kube-system", "kube-dns"

// dnsUpdate is what one updateDNS was given, and the servers it found.
type dnsUpdate struct {
	e       *engine.Engine
	ir      *compile.IR
	servers []netip.Addr
}

// followDNS hands the learner the last pass's programme again when the
// cluster DNS's addresses changed since (the input did not).
func (a *Agent) followDNS(ctx context.Context) {
	if a.cfg.DNS == nil || a.dnsLast.e == nil || a.cfg.ClusterDNS == nil || len(a.cfg.DNSServers) > 0 {
		return
	}
	if servers, _ := a.dnsServers(a.dnsLast.e); !slices.Equal(servers, a.dnsLast.servers) {
		a.updateDNS(ctx, a.dnsLast.e, a.dnsLast.ir)
	}
}

// dnsServers are the servers whose answers teach: --dns-server, else the
// cluster DNS as ClusterDNS reads it, else the input's kube-dns Service;
// or why there are none.
func (a *Agent) dnsServers(e *engine.Engine) ([]netip.Addr, error) {
	if len(a.cfg.DNSServers) > 0 {
		return a.cfg.DNSServers, nil
	}
	if a.cfg.ClusterDNS != nil {
		servers, err := a.cfg.ClusterDNS()
		if err == nil && len(servers) == 0 {
			err = fmt.Errorf("Service %s/%s has no cluster IP", clusterDNSNamespace, clusterDNSName)
		}
		return servers, err
	}
	if s := e.Cluster().Service(clusterDNSNamespace, clusterDNSName); s != nil && len(s.ClusterIPs) > 0 {
		return s.ClusterIPs, nil
	}
	return nil, fmt.Errorf("no Service %s/%s in the input", clusterDNSNamespace, clusterDNSName)
}

// updateDNS hands the learner what the pass programmed: the DNS servers,
// the local pods whose egress has a domainNames rule, and the domain sets.
// While there are domainNames rules and no server, the agent is not
// ready: their connections are denied.
func (a *Agent) updateDNS(ctx context.Context, e *engine.Engine, ir *compile.IR) {
	if a.cfg.DNS == nil {
		return
	}
	servers, serr := a.dnsServers(e)
	a.dnsLast = dnsUpdate{e: e, ir: ir, servers: servers}
	var noDNS error
	if len(ir.DomainSets) > 0 && serr != nil {
		noDNS = fmt.Errorf("domainNames rules, and no DNS server to learn their addresses from (their connections are denied): %w", serr)
	}
	a.health.mu.Lock()
	a.health.noDNS = noDNS
	a.health.mu.Unlock()
	learns := map[string]bool{} // egress tables with a domainNames rule
	for _, t := range ir.Tables {
		for _, r := range t.Rules {
			if r.Domains != "" {
				learns[t.Name] = true
				break
			}
		}
	}
	c := e.Cluster()
	var clients []netip.Addr
	for _, p := range ir.Pods {
		if !learns[p.Egress] {
			continue
		}
		for _, ip := range p.IPs {
			if c.NodeByIP(ip) == nil { // a host-network pod's answers never cross the divert
				clients = append(clients, ip)
			}
		}
	}
	if noDNS != nil {
		klog.ErrorS(serr, "domainNames rules, but no DNS server to learn from: give --dns-server, or a Service kube-system/kube-dns; their connections are denied",
			"node", a.cfg.Node)
	}
	// No answer may teach an address of the cluster's own: a name under an
	// allowed wildcard that resolves to a node or a pod would open it.
	cluster := func(ip netip.Addr) bool {
		return c.NodeByIP(ip) != nil || c.PodByIP(ip) != nil || c.ServiceByIP(ip) != nil
	}
	scope := dnsproxy.Scope{Servers: servers, Clients: clients, Sets: ir.DomainSets, Cluster: cluster}
	if err := a.cfg.DNS.Update(ctx, scope); err != nil {
		a.metrics.errors.WithLabelValues(stageDNS).Inc()
		klog.ErrorS(err, "The DNS proxy could not follow the pass; domainNames connections may be denied until it can", "node", a.cfg.Node)
	}
}

// dnsCollectors export the learner's counts, its Stats read once a
// scrape (they sweep every learned address, under the lock that the
// answers' hold needs).
func dnsCollectors(l DNSLearner) []prometheus.Collector {
	c := &statsCollector[dnsproxy.Stats]{stats: l.Stats}
	c.counter("netpol_dns_answers_total", "DNS answers to local pods held until the addresses they teach were programmed.",
		func(s dnsproxy.Stats) float64 { return float64(s.Answers) })
	c.counter("netpol_dns_answers_unreadable_total", "Held answers that were not DNS responses the proxy reads: sent on, nothing learned.",
		func(s dnsproxy.Stats) float64 { return float64(s.Unreadable) })
	c.counter("netpol_dns_addresses_learned_total", "Addresses written into domainNames sets (again when an answer refreshed them).",
		func(s dnsproxy.Stats) float64 { return float64(s.Learned) })
	c.counter("netpol_dns_addresses_expired_total", "Learned addresses whose timeout passed (the kernel removed them).",
		func(s dnsproxy.Stats) float64 { return float64(s.Expired) })
	c.counter("netpol_dns_addresses_capped_total", "Addresses not learned because the node's cap (--dns-max-addresses) was reached.",
		func(s dnsproxy.Stats) float64 { return float64(s.CapHits) })
	c.counter("netpol_dns_write_errors_total", "Writes of learned addresses that the kernel refused.",
		func(s dnsproxy.Stats) float64 { return float64(s.Errors) })
	c.counter("netpol_dns_answers_unasked_total", "Held answers that answer no query a local pod sent (ID, name, type, address and port, within 10 s): sent on, nothing learned.",
		func(s dnsproxy.Stats) float64 { return float64(s.Unasked) })
	c.counter("netpol_dns_datagrams_refused_total", "Datagrams on the DNS proxy's socket that the divert did not deliver: dropped, never read as answers.",
		func(s dnsproxy.Stats) float64 { return float64(s.Refused) })
	c.counter("netpol_dns_addresses_never_learned_total", "Addresses in answers not learned because they are the cluster's own (nodes, pods, Services) or no host's (loopback, link-local, multicast, unspecified).",
		func(s dnsproxy.Stats) float64 { return float64(s.Never) })
	c.counter("netpol_dns_queries_lost_total", "Log messages of local pods' DNS queries that the kernel dropped (the agent's socket was full): their answers teach nothing.",
		func(s dnsproxy.Stats) float64 { return float64(s.QueriesLost) })
	c.counter("netpol_dns_tcp_asks_failed_total", "Truncated answers whose question the proxy could not ask the server again over TCP.",
		func(s dnsproxy.Stats) float64 { return float64(s.AskFailed) })
	c.gauge("netpol_dns_addresses", "Addresses learned from DNS answers and not expired.",
		func(s dnsproxy.Stats) float64 { return float64(s.Addresses) })
	c.gauge("netpol_dns_names", "Names and wildcards in the domainNames rules of this node's pods, whose answers teach.",
		func(s dnsproxy.Stats) float64 { return float64(s.Names) })
	return append(l.Collectors(), c)
}
