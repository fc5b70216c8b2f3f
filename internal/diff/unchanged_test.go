package diff

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/synth"
)

// TestQuietPairsAreUnchanged diffs small random clusters against their
// "pull request" variant (synth.Random: pods relabelled, added and
// removed, namespaces relabelled, policies of every API changed, added and
// removed), both ways, deciding only the pairs with a pod that is not
// quiet, and every pair: the results must be the same.
func TestQuietPairsAreUnchanged(t *testing.T) {
	seeds := int64(400)
	if testing.Short() {
		seeds = 60
	}
	for seed := int64(1000); seed < 1000+seeds; seed++ {
		a, b := loadYAML(t, synth.Random(seed, 0)), loadYAML(t, synth.Random(seed, 1))
		for _, c := range []struct {
			name     string
			old, new *engine.Engine
		}{{"old -> new", a, b}, {"new -> old", b, a}, {"same", a, a}} {
			var quiet, every strings.Builder
			writeResult(&quiet, compare(c.old, c.new, Options{Explain: true}, false))
			writeResult(&every, compare(c.old, c.new, Options{Explain: true}, true))
			if quiet.String() != every.String() {
				t.Fatalf("seed %d, %s: quiet pairs left out:\n%s\nevery pair:\n%s", seed, c.name, quiet.String(), every.String())
			}
		}
	}
}

func writeResult(b *strings.Builder, r *Result) {
	fmt.Fprintf(b, "%+v %v %v %+v\n", r.Summary, r.AddedPods, r.RemovedPods, r.Services)
	for _, l := range lines(r) {
		b.WriteString(l + "\n")
	}
	for _, g := range r.Groups {
		for _, e := range g.Entries {
			for _, x := range e.Explain {
				fmt.Fprintf(b, "%s %s %s -> %s %s: %s / %s\n", x.Change, FormatPorts(x.Ports), x.From, x.To, x.Port, Describe(x.Old), Describe(x.New))
			}
		}
	}
}

// TestPolicyContentCoversTheModel: policyContent must write every field
// of the policy model that can change a verdict, or diff would take a
// changed policy for the same one and skip the pairs it decides. A field
// added to the model fails this test until policyContent writes it (or
// it is listed here as one that decides nothing).
func TestPolicyContentCoversTheModel(t *testing.T) {
	want := map[reflect.Type][]string{
		reflect.TypeFor[policy.Policy]():            {"Ref", "Origin", "Tier", "Priority", "Subject", "Rules", "Isolates", "Audit", "Staged", "Invalid"},
		reflect.TypeFor[policy.Rule]():              {"Policy", "Dir", "Index", "Name", "Action", "AllPeers", "Peers", "AllPorts", "Ports", "FailClosed"},
		reflect.TypeFor[policy.Peer]():              {"Kind", "Index", "Pods", "Block", "Nodes", "Domains"},
		reflect.TypeFor[policy.PodSelector]():       {"Namespaces", "Pods"},
		reflect.TypeFor[policy.NamespaceSelector](): {"Match", "Selector", "Name", "Keys"},
		reflect.TypeFor[policy.PortMatch]():         {"Range", "Named", "NamedProto"},
		reflect.TypeFor[policy.IPBlock]():           {"CIDR", "Except"},
	}
	for typ, fields := range want {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if !slices.Equal(got, fields) {
			t.Errorf("%s has fields %v; policyContent was written for %v", typ, got, fields)
		}
	}
	// And the pod: podKey writes all but its identity and what only
	// Services look at.
	var got []string
	typ := reflect.TypeFor[state.Pod]()
	for i := range typ.NumField() {
		got = append(got, typ.Field(i).Name)
	}
	if fields := []string{"ID", "Namespace", "Name", "Labels", "IPs", "Node", "HostNetwork", "Ports", "Owner", "NotReady", "Origin"}; !slices.Equal(got, fields) {
		t.Errorf("state.Pod has fields %v; podKey was written for %v", got, fields)
	}
}
