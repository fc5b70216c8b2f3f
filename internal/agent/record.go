package agent

import (
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/netpol/netpol/internal/observed"
	"github.com/netpol/netpol/internal/state"
)

// Recorder keeps the record of the connections the kernel logs for it
// (observed.Recorder): after every pass the agent tells it how addresses
// map to workloads, before the kernel records with the new rules.
type Recorder interface {
	Update(endpointOf func(netip.Addr) string)
	Stats() observed.Stats
}

// podNames names an address by a name of the pod that has it (its Key for
// the audit log, its Workload for the record), "" when no pod has it.
func podNames(c *state.Cluster, name func(*state.Pod) string) func(netip.Addr) string {
	return func(ip netip.Addr) string {
		if p := c.PodByIP(ip); p != nil {
			return name(p)
		}
		return ""
	}
}

// recordCollectors export the recorder's counts, its Stats read once a
// scrape.
func recordCollectors(r Recorder) []prometheus.Collector {
	c := &statsCollector[observed.Stats]{stats: r.Stats}
	c.counter("netpol_record_connections_total", "New connections of this node's pods recorded (--record), a flow once per 10 s window.",
		func(s observed.Stats) float64 { return float64(s.Connections) })
	c.counter("netpol_record_dropped_total", "Recorded connections not kept: their entry would pass --record-max-flows of its verdict.",
		func(s observed.Stats) float64 { return float64(s.Dropped) })
	c.gauge("netpol_record_flows", "Entries of the record: (source, destination, port, verdict) seen.",
		func(s observed.Stats) float64 { return float64(s.Flows) })
	return []prometheus.Collector{c}
}
