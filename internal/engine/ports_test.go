package engine_test

import (
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// TestAllowedPortsAgreesWithAllowed decides every pair of pods of small
// random clusters (synth.Random: every policy API and peer shape, host
// network pods, IPv6, Pass in both tiers), with and without the legacy
// namespace isolation, on ports inside and around every port the
// generator writes, once per port (Allowed, Decide's sides) and all at once
// (AllowedPorts, SidePorts).
func TestAllowedPortsAgreesWithAllowed(t *testing.T) {
	ports := []l4.Port{{Proto: l4.TCP, Num: 1}, {Proto: l4.TCP, Num: 53}, {Proto: l4.TCP, Num: 80}, {Proto: l4.TCP, Num: 81},
		{Proto: l4.TCP, Num: 443}, {Proto: l4.TCP, Num: 7999}, {Proto: l4.TCP, Num: 8000}, {Proto: l4.TCP, Num: 8080},
		{Proto: l4.TCP, Num: 8100}, {Proto: l4.TCP, Num: 9000}, {Proto: l4.TCP, Num: 9001}, {Proto: l4.TCP, Num: 9090},
		{Proto: l4.UDP, Num: 53}, {Proto: l4.UDP, Num: 54}, {Proto: l4.SCTP, Num: 5000}, {Proto: l4.SCTP, Num: 80}}
	seeds := int64(300)
	if testing.Short() {
		seeds = 50
	}
	got, egress, ingress := make([]bool, len(ports)), make([]bool, len(ports)), make([]bool, len(ports))
	for seed := int64(0); seed < seeds; seed++ {
		for _, legacy := range []bool{false, true} {
			dec := &source.Decoder{}
			objs := dec.Decode("random.yaml", []byte(synth.Random(seed, int(seed%2))))
			e, _, err := pipeline.Build(objs, dec.Diags, pipeline.Options{LegacyNamespaceIsolation: legacy})
			if err != nil {
				t.Fatal(err)
			}
			pods := e.Cluster().Pods
			for _, src := range pods {
				for _, dst := range pods {
					f, ok := e.PodFlow(src, dst, l4.Port{})
					if !ok {
						continue
					}
					e.AllowedPorts(f, ports, got)
					e.SidePorts(policy.Egress, f, ports, egress)
					e.SidePorts(policy.Ingress, f, ports, ingress)
					for i, port := range ports {
						f.Port = port
						if want := e.Allowed(f); got[i] != want {
							t.Fatalf("seed %d legacy %v: %s -> %s on %s: AllowedPorts %v, Allowed %v\n%s", seed, legacy, src.Key(), dst.Key(), port, got[i], want, explainBoth(e, f))
						}
						if v := e.Decide(f); src != dst && (egress[i] != v.Egress.Allowed || ingress[i] != v.Ingress.Allowed) {
							t.Fatalf("seed %d legacy %v: %s -> %s on %s: SidePorts %v/%v, Decide %v/%v", seed, legacy, src.Key(), dst.Key(), port, egress[i], ingress[i], v.Egress.Allowed, v.Ingress.Allowed)
						}
					}
				}
			}
		}
	}
}

func explainBoth(e *engine.Engine, f engine.Flow) string {
	v := e.Decide(f)
	return "egress: " + sideTrace(v.Egress) + "\ningress: " + sideTrace(v.Ingress)
}
