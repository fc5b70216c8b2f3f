package suggest

import (
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// verifyPairs is Verify as it was first written, pair by pair and port by
// port, with an engine decision each: too slow for a large cluster, simple
// enough to be the oracle that Verify's classes are checked against.
func verifyPairs(before, after *engine.Engine, flows []Flow) (Report, error) {
	r := Report{Flows: len(flows)}
	type cell struct {
		src, dst string
		port     l4.Port
	}
	observed := map[cell]bool{}
	named := NewEnds(after.Cluster())
	for _, f := range flows {
		srcs, err := endpoints(after, named, f.From)
		if err != nil {
			return r, err
		}
		dsts, err := endpoints(after, named, f.To)
		if err != nil {
			return r, err
		}
		allowed := true
		for _, src := range srcs {
			for _, dst := range dsts {
				if src.Pod != nil && src.Pod == dst.Pod {
					continue // a pod of the workload towards itself
				}
				allowed = allowed && flowAllowed(after, src, dst, f.Port)
				if src.Pod != nil && dst.Pod != nil {
					observed[cell{src.Pod.Key(), dst.Pod.Key(), f.Port}] = true
				}
			}
		}
		if allowed {
			r.Allowed++
		} else {
			r.Denied = append(r.Denied, f)
		}
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
				if allowedAfter && !observed[cell{keys[i], keys[j], cp.Port}] {
					r.OpenUnobserved++
				}
			}
		}
	}
	return r, nil
}
