package suggest

import (
	"net/netip"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// Report says what suggested policies do, from the engine's verdicts on
// the input before and after they are applied, enforced.
type Report struct {
	Flows   int    `json:"flows"`   // observed flows
	Allowed int    `json:"allowed"` // of those, allowed after
	Denied  []Flow `json:"denied,omitempty"`
	// Lost counts pod pairs x the destination's declared ports allowed
	// before and denied after: what the suggestion takes away.
	Lost int `json:"lost"`
	// OpenUnobserved counts pod pairs x declared ports allowed after that
	// no flow was observed on: the least-privilege gap that is left.
	OpenUnobserved int `json:"openUnobserved"`
	// Cells is how many pod pairs x declared ports were compared.
	Cells int `json:"cells"`
}

// Verify decides every observed flow after, and every pod pair on every
// port its destination declares before and after. A flow that names a
// workload is allowed only if it is for every pod of the workload (every
// pair of pods, when both ends are workloads), and marks every such pair
// observed.
func Verify(before, after *engine.Engine, flows []Flow) (Report, error) {
	r := Report{Flows: len(flows)}
	type cell struct {
		src, dst string
		port     l4.Port
	}
	observed := map[cell]bool{}
	named := newEnds(after.Cluster())
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

// endpoints are the ends a flow end names: an address (a pod's, a node's,
// or outside the cluster), a pod, or a workload's pods.
func endpoints(e *engine.Engine, named *ends, end string) ([]engine.Endpoint, error) {
	if a, err := netip.ParseAddr(end); err == nil {
		ep, err := e.Endpoint(a.String())
		return []engine.Endpoint{ep}, err
	}
	pods, err := named.pods(end)
	if err != nil {
		return nil, err
	}
	eps := make([]engine.Endpoint, len(pods))
	for i, p := range pods {
		eps[i] = e.PodEndpoint(p, netip.Addr{})
	}
	return eps, nil
}

// flowAllowed decides src -> dst on port, a pod named by name over the
// family the other end has (engine.NewFlow); ends with no family in
// common have no connection to allow.
func flowAllowed(e *engine.Engine, src, dst engine.Endpoint, port l4.Port) bool {
	f, err := e.NewFlow(src, dst, l4.PortSpec{Num: port.Num, Proto: port.Proto})
	return err == nil && e.Allowed(f)
}
