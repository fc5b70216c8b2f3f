package engine_test

import (
	"strings"
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

// TestSelectionsAndApplicable: what the front ends that group pods ask of
// the engine (PeerSelection, PeerMatches, Applicable, Members).
func TestSelectionsAndApplicable(t *testing.T) {
	e := semEngine(t, `
apiVersion: v1
kind: Namespace
metadata: {name: a, labels: {team: a}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: a, labels: {app: web}}
status: {podIP: 198.18.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: a, labels: {app: db}}
status: {podIP: 198.18.0.2}
---
apiVersion: v1
kind: Pod
metadata: {name: db2, namespace: a, labels: {app: db}}
status: {podIP: 198.18.0.3}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}, {ipBlock: {cidr: 198.18.0.0/24}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: team}
spec:
  priority: 1
  subject: {namespaces: {matchLabels: {team: a}}}
  ingress: [{action: Allow, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}]}]
`, engine.Options{})
	set := e.Policies()
	np, anp := set.NetworkPolicies[0], set.Admin[0]
	c := e.Cluster()
	web, db := c.Pod("a/web"), c.Pod("a/db")
	npRule, anpRule := np.Rules[policy.Ingress][0], anp.Rules[policy.Ingress][0]

	// The NetworkPolicy's and the admin policy's web peers select alike
	// but in other namespace scopes: two selections of the same pod.
	s1, ok1 := e.PeerSelection(npRule, 0)
	s2, ok2 := e.PeerSelection(anpRule, 0)
	if !ok1 || !ok2 || s1.ID == s2.ID || len(s1.Pods) != 1 || s1.Pods[0] != web.ID || len(s2.Pods) != 1 || s2.Pods[0] != web.ID {
		t.Errorf("PeerSelection: %v %v, %v %v; want web's pod alone", s1, ok1, s2, ok2)
	}
	if _, ok := e.PeerSelection(npRule, 1); ok {
		t.Error("PeerSelection of an ipBlock peer: want not ok")
	}
	f, _ := e.PodFlow(web, db, l4.Port{})
	if !e.PeerMatches(npRule, f) || !e.PeerMatches(anpRule, f) {
		t.Error("PeerMatches web -> db: want both rules' peers to match")
	}
	back, _ := e.PodFlow(db, web, l4.Port{})
	if e.PeerMatches(anpRule, back) {
		t.Error("PeerMatches db -> web: the admin rule's peer is web")
	}
	var got []string
	for _, p := range e.Applicable(db) {
		got = append(got, p.Ref.String())
	}
	if want := "AdminNetworkPolicy team, NetworkPolicy a/db"; strings.Join(got, ", ") != want {
		t.Errorf("Applicable(db) = %v, want %s", got, want)
	}
	if n := len(e.Members(np)); n != 2 {
		t.Errorf("Members(np): %d pods, want 2", n)
	}
}
