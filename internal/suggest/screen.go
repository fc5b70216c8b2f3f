package suggest

import (
	"fmt"
	"net/netip"

	"github.com/netpol/netpol/internal/state"
)

// FanOut says which flows Screen takes for a scan rather than an
// application's traffic. Zero fields keep everything.
type FanOut struct {
	// Ports: more destination ports than this from one source to one
	// destination.
	Ports int
	// Peers: more destinations than this from one source.
	Peers int
}

// DefaultFanOut are suggest's defaults: an application talks to a handful
// of ports of a peer, and a workload to tens of peers; a port or address
// scan, which a pod of the recorded cluster may run to be allowed what it
// probed, goes far past both.
var DefaultFanOut = FanOut{Ports: 16, Peers: 64}

// Screen returns the flows a suggestion may be written from, and why each
// other one is left out:
//   - a recorded flow whose end is an address that no pod had when it was
//     recorded (the agent names pods' ends by workload) but that a pod of
//     c has now: crediting that pod would allow it what another host did
//     with the address;
//   - a source's flows past fan (many ports to one destination, or many
//     destinations), unless fan is zero.
//
// The order of flows is kept.
func Screen(c *state.Cluster, flows []Flow, fan FanOut) (kept []Flow, warnings []string) {
	kept = flows[:0:0]
	for _, f := range flows {
		if w := nowAPod(c, f); w != "" {
			warnings = append(warnings, w)
			continue
		}
		kept = append(kept, f)
	}
	type pair struct{ from, to string }
	ports := map[pair]int{}
	peers := map[string]int{}
	for _, f := range kept {
		p := pair{f.From, f.To}
		if ports[p] == 0 {
			peers[f.From]++
		}
		ports[p]++
	}
	said := map[pair]bool{}
	out := kept[:0]
	for _, f := range kept {
		p := pair{f.From, f.To}
		switch {
		case fan.Peers > 0 && peers[f.From] > fan.Peers:
			if !said[pair{from: f.From}] {
				said[pair{from: f.From}] = true
				warnings = append(warnings, fmt.Sprintf("%s: %d destinations (more than --fan-out-peers %d): a scan, not an application's traffic; left out (--keep-fan-out keeps it)", f.From, peers[f.From], fan.Peers))
			}
		case fan.Ports > 0 && ports[p] > fan.Ports:
			if !said[p] {
				said[p] = true
				warnings = append(warnings, fmt.Sprintf("%s -> %s: %d ports (more than --fan-out-ports %d): a scan, not an application's traffic; left out (--keep-fan-out keeps it)", f.From, f.To, ports[p], fan.Ports))
			}
		default:
			out = append(out, f)
		}
	}
	return out, warnings
}

// nowAPod says why f is left out when it is a recorded flow with an
// address end that a pod has now, or "".
func nowAPod(c *state.Cluster, f Flow) string {
	if !f.Recorded {
		return ""
	}
	for _, end := range []string{f.From, f.To} {
		a, err := netip.ParseAddr(end)
		if err != nil {
			continue
		}
		if p := c.PodByIP(a.Unmap()); p != nil && !p.HostNetwork {
			return fmt.Sprintf("%s -> %s %s: recorded when %s was no pod's, now pod %s's; left out", f.From, f.To, f.Port, end, p.Key())
		}
	}
	return ""
}
