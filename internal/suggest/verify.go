package suggest

import (
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
// port its destination declares before and after.
func Verify(before, after *engine.Engine, flows []Flow) (Report, error) {
	r := Report{Flows: len(flows)}
	type cell struct {
		src, dst string
		port     l4.Port
	}
	observed := map[cell]bool{}
	for _, f := range flows {
		src, err := after.Endpoint(f.From)
		if err != nil {
			return r, err
		}
		dst, err := after.Endpoint(f.To)
		if err != nil {
			return r, err
		}
		if after.Allowed(engine.Flow{Src: src, Dst: dst, Port: f.Port}) {
			r.Allowed++
		} else {
			r.Denied = append(r.Denied, f)
		}
		if src.Pod != nil && dst.Pod != nil {
			observed[cell{src.Pod.Key(), dst.Pod.Key(), f.Port}] = true
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
