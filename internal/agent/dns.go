package agent

import (
	"context"
	"net/netip"

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
	Update(ctx context.Context, servers, clients []netip.Addr, sets []*compile.DomainSet) error
	Stats() dnsproxy.Stats
	NamesOf(netip.Addr) []string        // the names whose answers taught an address
	Collectors() []prometheus.Collector // its own metrics
}

// clusterDNS is the Service whose addresses pods resolve through when
// Config.DNSServers names none: CoreDNS keeps kube-dns's name for it.
const clusterDNSNamespace, clusterDNSName = "kube-system", "kube-dns"

// updateDNS hands the learner what the pass programmed: the DNS servers,
// the local pods whose egress has a domainNames rule, and the domain sets.
func (a *Agent) updateDNS(ctx context.Context, e *engine.Engine, ir *compile.IR) {
	if a.cfg.DNS == nil {
		return
	}
	servers := a.cfg.DNSServers
	if len(servers) == 0 {
		if s := e.Cluster().Service(clusterDNSNamespace, clusterDNSName); s != nil {
			servers = s.ClusterIPs
		}
	}
	learns := map[string]bool{} // egress tables with a domainNames rule
	for _, t := range ir.Tables {
		for _, r := range t.Rules {
			if r.Domains != "" {
				learns[t.Name] = true
				break
			}
		}
	}
	var clients []netip.Addr
	for _, p := range ir.Pods {
		if learns[p.Egress] {
			clients = append(clients, p.IPs...)
		}
	}
	if len(ir.DomainSets) > 0 && len(servers) == 0 {
		klog.InfoS("domainNames rules, but no DNS server to learn from: give --dns-server, or a Service kube-system/kube-dns; their connections are denied",
			"node", a.cfg.Node)
	}
	if err := a.cfg.DNS.Update(ctx, servers, clients, ir.DomainSets); err != nil {
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
	c.counter("netpol_dns_tcp_asks_failed_total", "Truncated answers whose question the proxy could not ask the server again over TCP.",
		func(s dnsproxy.Stats) float64 { return float64(s.AskFailed) })
	c.gauge("netpol_dns_addresses", "Addresses learned from DNS answers and not expired.",
		func(s dnsproxy.Stats) float64 { return float64(s.Addresses) })
	c.gauge("netpol_dns_names", "Names and wildcards in the domainNames rules of this node's pods, whose answers teach.",
		func(s dnsproxy.Stats) float64 { return float64(s.Names) })
	return append(l.Collectors(), c)
}
