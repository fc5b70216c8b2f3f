package suggest

import (
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// verifyPairs is Verify as it was first written, pair by pair and port by
// port, with an engine decision each: too slow for a large cluster, simple
// enough to be the oracle that Verify's classes are checked against. The
// flows are observed the same way (observeFlows), each decided by the
// engine directly instead of through Verify's class memo; the cells are
// counted pod by pod.
func verifyPairs(before, after *engine.Engine, flows []Flow) (Report, error) {
	r, observed, err := observeFlows(after, flows, func(src, dst engine.Endpoint, port l4.Port) bool {
		return flowAllowed(after, src, dst, port)
	})
	if err != nil {
		return r, err
	}
	// Keys and the pods of before, once per pod, not per pair and port.
	pods := after.Cluster().Pods
	keys := make([]string, len(pods))
	was := make([]*state.Pod, len(pods))
	for i, p := range pods {
		keys[i] = p.Key()
		was[i] = before.Cluster().Pod(keys[i])
	}
	for i, s := range pods {
		for j, d := range pods {
			if i == j || s.HostNetwork || d.HostNetwork {
				continue
			}
			for _, cp := range d.Ports {
				fa, ok := after.PodFlow(s, d, cp.Port)
				if !ok {
					continue
				}
				r.Cells++
				allowedAfter := after.Allowed(fa)
				if was[i] != nil && was[j] != nil && !allowedAfter {
					if fb, ok := before.PodFlow(was[i], was[j], cp.Port); ok && before.Allowed(fb) {
						r.Lost++
					}
				}
				if allowedAfter && !observed[obsCell{s, d, cp.Port}] {
					r.OpenUnobserved++
				}
			}
		}
	}
	return r, nil
}
