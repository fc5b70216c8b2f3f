package suggest

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// buildLenient is the engine of a random cluster (synth.Random writes a
// field or two that only the lenient decoder takes).
func buildLenient(t *testing.T, docs string) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{Options: source.Options{Lenient: true}}
	e, _, err := pipeline.Build(dec.Decode("random.yaml", []byte(docs)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// withDeployment adds a Deployment of 1 to 3 replicas to a random
// cluster, so that flows can name a workload.
func withDeployment(r *rand.Rand, docs string) string {
	return docs + fmt.Sprintf(`
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: dep, namespace: ns-0}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec: {containers: [{name: c, ports: [{name: http, containerPort: 80}]}]}
`, 1+r.Intn(3), []string{"web", "db", "dep"}[r.Intn(3)])
}

// randomFlows draws flows among e's pods (by name, by address),
// workloads and outside addresses, on declared ports and others.
func randomFlows(r *rand.Rand, e *engine.Engine) []Flow {
	var ends []string
	for _, p := range e.Cluster().Pods {
		if len(p.Labels) == 0 {
			continue // no selector for it: suggest refuses (TestSuggestRefusesUnselectable)
		}
		ends = append(ends, p.Key())
		if p.Owner != "" {
			ends = append(ends, p.Workload())
		}
		for _, ip := range p.IPs {
			if r.Intn(3) == 0 {
				ends = append(ends, ip.String())
			}
		}
	}
	ends = append(ends, "203.0.113.7", "fd00:ff::7")
	ports := []l4.Port{{Proto: l4.TCP, Num: 80}, {Proto: l4.TCP, Num: 8080}, {Proto: l4.TCP, Num: 9090},
		{Proto: l4.UDP, Num: 53}, {Proto: l4.SCTP, Num: 5000}, {Proto: l4.TCP, Num: 443}}
	var flows []Flow
	for i, n := 0, r.Intn(12); i < n; i++ {
		flows = append(flows, Flow{From: ends[r.Intn(len(ends))], To: ends[r.Intn(len(ends))],
			Port: ports[r.Intn(len(ports))], Count: 1 + r.Intn(3)})
	}
	return Merge(flows)
}

// TestVerifyAgreesWithPairs compares Verify, which follows classes, with
// verifyPairs, which decides every pair on every port, on small random
// clusters (synth.Random: every policy API, host-network, dual-stack and
// IPv6-only pods, a Deployment added): after as the cluster's "pull
// request" variant (pods relabelled, added and removed), and after as the
// cluster with the suggestion for random flows enforced, in each tier.
// The reports must be the same, to the denied flows.
func TestVerifyAgreesWithPairs(t *testing.T) {
	seeds := int64(300)
	if testing.Short() {
		seeds = 60
	}
	for seed := int64(0); seed < seeds; seed++ {
		r := rand.New(rand.NewSource(seed))
		dep := withDeployment(r, "")
		in0, in1 := synth.Random(seed, 0)+dep, synth.Random(seed, 1)+dep
		before := buildLenient(t, in0)
		afters := map[string]*engine.Engine{"variant": buildLenient(t, in1)}
		flows := randomFlows(r, afters["variant"])
		sflows := randomFlows(r, before)
		for name, tier := range map[string]Tier{"suggested": TierNetworkPolicy, "suggested admin": TierAdmin, "suggested baseline": TierBaseline} {
			ps, err := Suggest(before.Cluster(), sflows, Options{Enforce: true, Tier: tier, Priority: 100})
			if err != nil && tier == TierBaseline && strings.Contains(err.Error(), "has the BaselineAdminNetworkPolicy default already") {
				continue // TestSuggestBaselineTaken
			}
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			docs, err := YAML(ps)
			if err != nil {
				t.Fatal(err)
			}
			afters[name] = buildLenient(t, in0+"\n---\n"+string(docs))
		}
		for name, after := range afters {
			fl := flows
			if name != "variant" {
				fl = sflows
			}
			got, err := Verify(before, after, fl)
			want, werr := verifyPairs(before, after, fl)
			if !reflect.DeepEqual(got, want) || fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Fatalf("seed %d, after %s: classes %+v %v, pairs %+v %v\nflows %v", seed, name, got, err, want, werr, fl)
			}
		}
	}
}

// TestSuggestionAllowsItsFlows: NetworkPolicies only add allows, so the
// suggestion enforced allows every observed flow except where an admin
// policy denies it (above the NetworkPolicy tier) or an end is a
// host-network pod (which no policy selects). Every flow Verify reports
// denied is checked for one of those, pair by pair, with the trace, on
// random clusters of every policy API.
func TestSuggestionAllowsItsFlows(t *testing.T) {
	seeds := int64(200)
	if testing.Short() {
		seeds = 40
	}
	denied := 0
	for seed := int64(0); seed < seeds; seed++ {
		r := rand.New(rand.NewSource(seed))
		in := synth.Random(seed, 0) + withDeployment(r, "")
		before := buildLenient(t, in)
		flows := randomFlows(r, before)
		ps, err := Suggest(before.Cluster(), flows, Options{Enforce: true})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		docs, err := YAML(ps)
		if err != nil {
			t.Fatal(err)
		}
		after := buildLenient(t, in+"\n---\n"+string(docs))
		rep, err := Verify(before, after, flows)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		named := NewEnds(after.Cluster())
		for _, f := range rep.Denied {
			denied++
			srcs, _ := endpoints(after, named, f.From)
			dsts, _ := endpoints(after, named, f.To)
			for _, s := range srcs {
				for _, d := range dsts {
					fl, err := after.NewFlow(s, d, l4.PortSpec{Num: f.Port.Num, Proto: f.Port.Proto})
					if err != nil || after.Allowed(fl) {
						continue
					}
					if s.Pod != nil && s.Pod.HostNetwork || d.Pod != nil && d.Pod.HostNetwork {
						continue
					}
					v := after.Decide(fl)
					if !byAdminDeny(v.Egress) && !byAdminDeny(v.Ingress) {
						t.Fatalf("seed %d: %s denied with the suggestion enforced, not by an admin deny:\negress %+v\ningress %+v", seed, f, v.Egress, v.Ingress)
					}
				}
			}
		}
	}
	t.Logf("%d observed flows denied, each by an admin policy or at a host-network pod", denied)
}

// byAdminDeny reports whether a side was denied by an admin rule.
func byAdminDeny(s engine.Side) bool {
	if s.Allowed || len(s.Steps) == 0 {
		return false
	}
	last := s.Steps[len(s.Steps)-1]
	return last.Tier == "Admin" && last.Action == engine.ActionDeny
}
