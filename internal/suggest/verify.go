package suggest

import (
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
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
	pods := after.Cluster().Pods
	for _, s := range pods {
		for _, d := range pods {
			if s == d || s.HostNetwork || d.HostNetwork {
				continue
			}
			for _, cp := range d.Ports {
				fa, ok := after.PodFlow(s, d, cp.Port)
				if !ok {
					continue
				}
				r.Cells++
				allowedAfter := after.Allowed(fa)
				if fb, ok := before.PodFlow(before.Cluster().Pod(s.Key()), before.Cluster().Pod(d.Key()), cp.Port); ok && before.Allowed(fb) && !allowedAfter {
					r.Lost++
				}
				if allowedAfter && !observed[cell{s.Key(), d.Key(), cp.Port}] {
					r.OpenUnobserved++
				}
			}
		}
	}
	return r, nil
}
