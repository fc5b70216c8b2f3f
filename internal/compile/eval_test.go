package compile_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/scenario"
	"github.com/netpol/netpol/internal/state"
)

// agreeWithDecide checks that the IR compiled for each node of e decides
// every pod pair as e.Decide does, side by side, over both address
// families, on the destination's declared ports and a few others. It
// returns the first disagreements.
func agreeWithDecide(e *engine.Engine) []string {
	c := e.Cluster()
	irs := map[string]*compile.Evaluator{}
	for _, n := range c.Nodes {
		irs[n.Name] = compile.Node(e, n.Name).Evaluator()
	}
	extra := []l4.Port{{Proto: l4.TCP, Num: 80}, {Proto: l4.TCP, Num: 81}, {Proto: l4.UDP, Num: 53}, {Proto: l4.SCTP, Num: 80}, {Proto: l4.TCP, Num: 65535}}
	var bad []string
	for _, src := range c.Pods {
		for _, dst := range c.Pods {
			if src == dst || src.HostNetwork || dst.HostNetwork || src.Node == "" || dst.Node == "" {
				continue
			}
			ports := append([]l4.Port(nil), extra...)
			for _, cp := range dst.Ports {
				ports = append(ports, cp.Port)
			}
			for _, like := range []netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()} {
				sip, ok1 := src.IP(like)
				dip, ok2 := dst.IP(like)
				if !ok1 || !ok2 {
					continue
				}
				for _, port := range ports {
					f := engine.Flow{Src: engine.Endpoint{IP: sip, Pod: src, ByAddress: true}, Dst: engine.Endpoint{IP: dip, Pod: dst, ByAddress: true}, Port: port}
					v := e.Decide(f)
					eg, _ := irs[src.Node].Decide(sip, dip, port)
					_, in := irs[dst.Node].Decide(sip, dip, port)
					if eg.Allowed != v.Egress.Allowed || in.Allowed != v.Ingress.Allowed {
						bad = append(bad, fmt.Sprintf("%s (%s) -> %s (%s) %s: IR egress %v ingress %v, Decide egress %v ingress %v",
							src.Key(), sip, dst.Key(), dip, port, eg.Allowed, in.Allowed, v.Egress.Allowed, v.Ingress.Allowed))
						if len(bad) == 5 {
							return bad
						}
					}
				}
			}
		}
	}
	return bad
}

// TestIRDecidesLikeEngine holds the compiled rules of every node against
// Decide on every step of the scenario corpus: what the kernel is given
// decides what the engine decides, without a kernel.
func TestIRDecidesLikeEngine(t *testing.T) {
	scenarios, err := scenario.LoadFiles([]string{"../../testdata/scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, s := range scenarios {
		if s.Topology != nil && len(s.Topology.Nodes) == 0 {
			s.Topology.Nodes = []string{"node-1", "node-2"}
		}
		res := scenario.Run(s, scenario.Options{AfterStep: func(st scenario.StepState) error {
			if !hasNodes(st.Engine.Cluster()) {
				return nil
			}
			checked++
			if bad := agreeWithDecide(st.Engine); len(bad) > 0 {
				return fmt.Errorf("the IR and Decide disagree:\n%s", strings.Join(bad, "\n"))
			}
			return nil
		}})
		for _, st := range res.Steps {
			if st.Err != nil {
				t.Errorf("%s, %s: %v", s.File, st.Name, st.Err)
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d scenario steps, want the corpus (over 100)", checked)
	}
}

func hasNodes(c *state.Cluster) bool {
	for _, p := range c.Pods {
		if p.Node != "" {
			return true
		}
	}
	return false
}
