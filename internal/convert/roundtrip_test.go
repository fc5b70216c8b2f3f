package convert

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/diff"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/manifest"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/scenario"
	"github.com/netpol/netpol/internal/source"
)

// roundTrip converts the admin policies of objects and reports what the
// engine decides differently with the ClusterNetworkPolicies in their
// place ("" when nothing), and whether there was anything to convert.
func roundTrip(t *testing.T, objects []source.Object, opts pipeline.Options) (changes string, problems diag.List, n int) {
	t.Helper()
	before, _, err := pipeline.Build(objects, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := ToClusterNetworkPolicies(objects)
	if len(r.Problems) > 0 || len(r.Policies) == 0 {
		return "", r.Problems, len(r.Policies)
	}
	data, err := manifest.YAML(r.Policies)
	if err != nil {
		t.Fatal(err)
	}
	gone := map[diag.Origin]bool{}
	for _, o := range r.Replaced {
		gone[o.Origin] = true
	}
	dec := &source.Decoder{}
	converted := dec.Decode("converted", data)
	if err := dec.Diags.Err(); err != nil {
		t.Fatalf("the converted policies do not decode: %v\n%s", err, data)
	}
	if problems := Prove(r, converted); len(problems) > 0 {
		return fmt.Sprintf("not proven rule for rule: %v", problems), nil, len(r.Policies)
	}
	after := slices.DeleteFunc(slices.Clone(objects), func(o source.Object) bool { return gone[o.Origin] })
	after = append(after, converted...)
	e, _, err := pipeline.Build(after, nil, opts)
	if err != nil {
		t.Fatalf("the converted policies do not build: %v\n%s", err, data)
	}
	if d := diff.Compare(before, e, diff.Options{}); !d.Empty() {
		return fmt.Sprintf("%+v", d.Groups), nil, len(r.Policies)
	}
	if reachOutside(before) != reachOutside(e) {
		return "verdicts towards addresses outside the cluster differ", nil, len(r.Policies)
	}
	return "", nil, len(r.Policies)
}

// reachOutside decides every pod towards a few addresses outside the
// cluster and every node, and back, on a few ports: diff compares pods
// with pods, and networks and nodes peers decide these.
func reachOutside(e *engine.Engine) string {
	var b strings.Builder
	var outside []engine.Endpoint
	names := []string{"198.18.255.1", "198.19.0.9", "192.0.2.1", "fd00::99", "203.0.113.9"}
	for _, n := range e.Cluster().Nodes {
		names = append(names, "node/"+n.Name)
	}
	for _, name := range names {
		if ep, err := e.Endpoint(name); err == nil {
			outside = append(outside, ep)
		}
	}
	var ports []l4.PortSpec
	for _, p := range []string{"53/udp", "80/tcp", "443/tcp", "9000/sctp", "34345/tcp", "8080/tcp"} {
		spec, _ := l4.ParsePortSpec(p)
		ports = append(ports, spec)
	}
	for _, p := range e.Cluster().Pods {
		pod := e.PodEndpoint(p, netip.Addr{})
		for _, o := range outside {
			for _, port := range ports {
				for _, ends := range [][2]engine.Endpoint{{pod, o}, {o, pod}} {
					if f, err := e.NewFlow(ends[0], ends[1], port); err == nil {
						fmt.Fprintf(&b, "%v %v\n", f, e.Decide(f).Allowed)
					}
				}
			}
		}
	}
	return b.String()
}

// TestRoundTripCorpus: every admin policy of the scenario corpus, at every
// step of every scenario, converts to ClusterNetworkPolicies that the
// engine decides exactly alike, or is one of the KEP-shape policies whose
// sameLabels, notSameLabels or related has no ClusterNetworkPolicy
// spelling (listed here by hand).
func TestRoundTripCorpus(t *testing.T) {
	scenarios, err := scenario.LoadFiles([]string{"../../testdata/scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]bool{}
	var steps, policies int
	for _, s := range scenarios {
		shape := source.ANPShape(s.Settings.ANPShape)
		opts := pipeline.Options{LegacyNamespaceIsolation: s.Settings.LegacyNamespaceIsolation}
		r := scenario.Run(s, scenario.Options{AfterStep: func(st scenario.StepState) error {
			dec := &source.Decoder{Options: source.Options{ANPShape: shape}}
			var objects []source.Object
			for i, raw := range st.Objects {
				objects = append(objects, dec.Decode(fmt.Sprintf("%s[%d]", st.File, i), raw)...)
			}
			changes, problems, n := roundTrip(t, objects, opts)
			if changes != "" {
				return fmt.Errorf("converted, the engine decides differently: %s", changes)
			}
			for _, p := range problems {
				refused[p.Object+" "+p.Field] = true
			}
			steps++
			policies += n
			return nil
		}})
		if !r.Passed() {
			var b strings.Builder
			scenario.WriteFailure(&b, r)
			t.Errorf("%s", b.String())
		}
	}
	var got []string
	for k := range refused {
		got = append(got, k)
	}
	slices.Sort(got)
	// The four KEP fields of the corpus (seeds/kep-2091-self.yaml,
	// -samelabels.yaml and -story4-tenants.yaml's two variants).
	want := []string{
		"AdminNetworkPolicy allow-same-namespace-app-b spec.ingress[0].from[0].pods.namespaces.related",
		"AdminNetworkPolicy pass-same-tenant spec.ingress[0].from[0].namespaces.sameLabels",
		"AdminNetworkPolicy tenant-creation-example spec.ingress[0].from[0].namespaces.notSameLabels",
		"AdminNetworkPolicy tenant-creation-example spec.ingress[0].from[0].namespaces.sameLabels",
	}
	if !slices.Equal(got, want) {
		t.Errorf("refused:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if steps == 0 || policies == 0 {
		t.Fatalf("%d steps, %d policies converted: the corpus was not read", steps, policies)
	}
	t.Logf("%d steps of %d scenarios, %d policies converted and decided alike", steps, len(scenarios), policies)
}

// TestRoundTripExamples: the bundled examples' admin policies convert
// and decide alike, but for the lint example's related: Self (a KEP field
// it shows lint finding).
func TestRoundTripExamples(t *testing.T) {
	for dir, refused := range map[string]string{
		"tenants": "", "domains": "", "diff/new": "", "cluster-network-policy": "",
		"lint": "AdminNetworkPolicy same-namespace spec.ingress[0].from[0].namespaces.related",
	} {
		dec := &source.Decoder{}
		objects, err := dec.Load([]string{"../../examples/" + dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		changes, problems, n := roundTrip(t, objects, pipeline.Options{})
		var got []string
		for _, p := range problems {
			got = append(got, p.Object+" "+p.Field)
		}
		if changes != "" || strings.Join(got, "\n") != refused {
			t.Errorf("examples/%s: %s; refused %q, want %q", dir, changes, got, refused)
		}
		if n == 0 && refused == "" && dir != "cluster-network-policy" {
			t.Errorf("examples/%s: nothing converted", dir)
		}
	}
}
