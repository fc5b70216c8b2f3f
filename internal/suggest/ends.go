package suggest

import (
	"fmt"
	"strings"

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
