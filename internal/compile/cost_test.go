package compile_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// The policies of a hostile tenant (issue 25, item 14) cost a node time
// and kernel objects in proportion to their size, not its square.

func compileObjects(tb testing.TB, objs []source.Object) *compile.IR {
	tb.Helper()
	e, _, err := pipeline.Build(objs, nil, pipeline.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return compile.Node(e, synth.HostileNode)
}

// BenchmarkAdversarialExcepts compiles a 56 KB NetworkPolicy whose ipBlock
// has 2,000 exceptions spread over fd00::/8 (102 s per pass before the
// difference was taken in one walk).
func BenchmarkAdversarialExcepts(b *testing.B) {
	objs := synth.ExceptPolicy(2000)
	var ir *compile.IR
	for b.Loop() {
		ir = compileObjects(b, objs)
	}
	b.ReportMetric(float64(irSize(ir).elements), "elements")
}

// BenchmarkAdversarialPeersPorts compiles a NetworkPolicy rule of 1,000
// peers and 1,000 ports (2,000,019 kernel rules when each peer was
// crossed with each port).
func BenchmarkAdversarialPeersPorts(b *testing.B) {
	objs := synth.PeersPortsPolicy(1000, 1000)
	var ir *compile.IR
	for b.Loop() {
		ir = compileObjects(b, objs)
	}
	sz := irSize(ir)
	b.ReportMetric(float64(sz.rules), "rules")
	b.ReportMetric(float64(sz.elements), "elements")
}

type size struct{ rules, portMatches, sets, elements int }

// irSize counts what the IR asks of a kernel: a rule matches its ports
// one by one at most (portMatches), and each set's elements.
func irSize(ir *compile.IR) size {
	var sz size
	for _, t := range ir.Tables {
		for _, r := range t.Rules {
			sz.rules++
			sz.portMatches += max(len(r.Ports), 1)
		}
	}
	for _, s := range ir.Sets {
		sz.sets++
		sz.elements += len(s.Prefixes)
	}
	for _, s := range ir.EndpointSets {
		sz.sets++
		sz.elements += len(s.Elements)
	}
	return sz
}

// TestAdversarialPeersPortsLinear: a rule of 1,000 peers and 1,000 ports
// is one rule over one set of the 1,000 peers, matching the 1,000 ports:
// O(peers + ports), not their product (1,000 rules of 1,000 port matches
// each before).
func TestAdversarialPeersPortsLinear(t *testing.T) {
	ir := compileObjects(t, synth.PeersPortsPolicy(1000, 1000))
	sz := irSize(ir)
	if sz.rules != 1 || sz.sets != 1 || sz.elements != 1000 || sz.portMatches != 1000 {
		t.Errorf("the 1,000 x 1,000 rule compiles to %d rules (%d port matches) and %d sets of %d elements; want 1 rule (1000 port matches) and 1 set of 1000",
			sz.rules, sz.portMatches, sz.sets, sz.elements)
	}
}

// TestAdversarialRefusedPolicyFailsClosed: a NetworkPolicy past the limit
// (10,002 terms: one peer, 10,001 ports) is refused, and the refusal names
// it; its pod stays isolated and the policy allows nothing, while the
// tenant's other policy for the same pod is programmed as usual, pass
// after pass.
func TestAdversarialRefusedPolicyFailsClosed(t *testing.T) {
	objs := synth.PeersPortsPolicy(1, compile.DefaultMaxPolicyTerms+1)
	objs = append(objs, synth.AllowFrom("small", "198.18.3.3/32", 8080))
	e, _, err := pipeline.Build(objs, nil, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The second pass takes the tables from the first: the refusal stays.
	var c compile.Compiler
	c.Node(e, synth.HostileNode)
	ir := c.Node(e, synth.HostileNode)
	ev := ir.Evaluator()
	pod := synth.HostilePodIP
	for _, c := range []struct {
		from    string
		port    uint16
		allowed bool
	}{
		{"198.19.0.0", 1000, false}, // the refused policy's peer and first port
		{"198.19.0.0", 8080, false},
		{"198.18.3.3", 8080, true}, // the other policy
		{"198.18.3.3", 1000, false},
		{"198.18.3.4", 8080, false}, // isolated
	} {
		_, in := ev.Decide(netip.MustParseAddr(c.from), pod, l4.Port{Proto: l4.TCP, Num: c.port})
		if !in.Applies || in.Allowed != c.allowed {
			t.Errorf("%s -> %s:%d: applies %v, allowed %v; want a table that allows: %v", c.from, pod, c.port, in.Applies, in.Allowed, c.allowed)
		}
	}
	want := "NetworkPolicy tenant/hostile has 10002 peers, ipBlock exceptions and ports, more than the 10000 a node programs: refused; it isolates the pods it selects and allows nothing"
	if len(ir.Refused) != 1 || ir.Refused[0].Error() != want {
		t.Errorf("refused %v, want one: %s", ir.Refused, want)
	}
	var text strings.Builder
	if err := compile.WriteText(&text, ir); err != nil || !strings.Contains(text.String(), "\nrefused: "+want+"\n") {
		t.Errorf("netpol compile's text (%v) does not say: refused: %s", err, want)
	}
}
