package suggest

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// Ends resolves the pods that flows name: "namespace/name" is a pod,
// "namespace/Kind/name" the pods of a controller (state.Pod.Workload,
// the name the agent records, which outlives the pods' own names across
// rollouts). Addresses are resolved by the caller, who knows what an
// address outside the cluster means to it.
type Ends struct {
	c *state.Cluster
	// workloads holds the controllers' pods by Pod.Workload, built on the
	// first workload asked for: one pass over the pods, not one per flow.
	workloads map[string][]*state.Pod
}

// NewEnds resolves the ends of flows in c.
func NewEnds(c *state.Cluster) *Ends { return &Ends{c: c} }

// Pods returns the pods end names, in the input's order; an end the input
// has no pod for is an error that names it.
func (e *Ends) Pods(end string) ([]*state.Pod, error) {
	if strings.Count(end, "/") == 2 {
		if e.workloads == nil {
			e.workloads = map[string][]*state.Pod{}
			for _, p := range e.c.Pods {
				if p.Owner != "" {
					w := p.Workload()
					e.workloads[w] = append(e.workloads[w], p)
				}
			}
		}
		ps := e.workloads[end]
		if len(ps) == 0 {
			return nil, fmt.Errorf("flow names workload %s (namespace/Kind/name), which the input has no pod of", end)
		}
		return ps, nil
	}
	p := e.c.Pod(end)
	if p == nil {
		return nil, fmt.Errorf("flow names pod %s, which the input does not have", end)
	}
	return []*state.Pod{p}, nil
}

// NamedPort resolves a port name of the destination to, a pod, a
// workload or a pod's address: every pod it names must declare the name
// alike (a workload's pods come from one template, but a rollout may be
// half done, and then the name means two ports).
func (e *Ends) NamedPort(to string, spec l4.PortSpec) (l4.Port, error) {
	var pods []*state.Pod
	if a, err := netip.ParseAddr(to); err == nil {
		p := e.c.PodByIP(a.Unmap())
		if p == nil || p.HostNetwork {
			return l4.Port{}, fmt.Errorf("port %q: no pod has the address %s, so nothing names its ports; name the port by number", spec, to)
		}
		pods = []*state.Pod{p}
	} else if pods, err = e.Pods(to); err != nil {
		return l4.Port{}, err
	}
	var first l4.Port
	for i, p := range pods {
		port, ok := p.NamedPort(spec.Name, spec.Proto)
		if !ok {
			over := ""
			if spec.Proto != 0 {
				over = " over " + spec.Proto.String()
			}
			return l4.Port{}, fmt.Errorf("port %q: %s declares no container port named %q%s", spec, p.Key(), spec.Name, over)
		}
		if i == 0 {
			first = port
		} else if port != first {
			return l4.Port{}, fmt.Errorf("port %q of %s: %s declares it as %s, %s as %s; name the port by number", spec, to, pods[0].Key(), first, p.Key(), port)
		}
	}
	return first, nil
}
