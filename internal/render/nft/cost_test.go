package nft_test

import (
	"context"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

func compileObjects(tb testing.TB, objs []source.Object) *compile.IR {
	tb.Helper()
	e, _, err := pipeline.Build(objs, nil, pipeline.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return compile.Node(e, synth.HostileNode)
}

// rulesetSize counts the rules of a ruleset text and the elements of its
// sets: named ones ("add element" lines, one per element) and anonymous
// ones (the comma-separated items between braces in a rule).
func rulesetSize(text string) (rules, elements int) {
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "add rule "):
			rules++
			if i := strings.Index(line, "{ "); i >= 0 {
				elements += strings.Count(line[i:strings.Index(line, " }")], ",") + 1
			}
		case strings.HasPrefix(line, "add element "):
			elements++
		}
	}
	return rules, elements
}

// TestAdversarialPeersPortsRuleset: the table of a rule of 1,000 peers and
// 1,000 ports holds O(peers + ports) kernel objects: its rules are a
// handful (one per family, and per protocol of the ports) and its
// elements the 1,000 peers and the 1,000 ports of each family's rule, next
// to the few of an empty table (2,000,019 rules when each peer was crossed with each port).
func TestAdversarialPeersPortsRuleset(t *testing.T) {
	empty, err := nft.Ruleset(&compile.IR{Node: synth.HostileNode})
	if err != nil {
		t.Fatal(err)
	}
	baseRules, baseElements := rulesetSize(empty)
	text, err := nft.Ruleset(compileObjects(t, synth.PeersPortsPolicy(1000, 1000)))
	if err != nil {
		t.Fatal(err)
	}
	rules, elements := rulesetSize(text)
	// The pod's address in the ingress map, and the drop of its isolation.
	if rules-baseRules > 3 || elements-baseElements > 3001 {
		t.Errorf("%d rules and %d elements beyond an empty table's %d and %d; want at most 3 rules (2 families and the drop) and 3,001 elements (1,000 peers, the 1,000 ports in each family's rule, the pod's map entry)",
			rules-baseRules, elements-baseElements, baseRules, baseElements)
	}
}

// TestLabAdversarialPeersPortsKernel: the kernel takes the table of a rule
// of 1,000 peers and 1,000 ports, and holds it as a few rules (the ports
// in an anonymous set of each) over one set of the 1,000 peers.
func TestLabAdversarialPeersPortsKernel(t *testing.T) {
	ir := compileObjects(t, synth.PeersPortsPolicy(1000, 1000))
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		if _, err := nft.New(nf).Sync(ctx, ir); err != nil {
			t.Fatal(err)
		}
		table := ir.Tables[0]
		rules, err := nf.ListRules(ctx, table.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(rules) != 3 {
			t.Errorf("chain %s has %d rules, want 3 (one per family, the drop)", table.Name, len(rules))
		}
		peers, err := nf.ListElements(ctx, "set", table.Rules[0].Peer+"-4")
		if err != nil {
			t.Fatal(err)
		}
		if len(peers) != 1000 {
			t.Errorf("the peers' set holds %d elements, want 1000", len(peers))
		}
		out, err := exec.Command("nft", "list", "chain", "inet", nft.TableName, table.Name).CombinedOutput()
		if err != nil {
			t.Fatalf("nft list chain: %v\n%s", err, out)
		}
		// The first and last of the ports 1000, 1002, ... 2998.
		for _, port := range []string{"{ 1000, 1002,", ", 2998 }"} {
			if got := strings.Count(string(out), port); got != 2 {
				t.Errorf("the kernel's chain has %q %d times, want twice (one rule per family):\n%.600s", port, got, out)
			}
		}
	})
}

// BenchmarkAdversarialExceptsRuleset writes the ruleset of the 56 KB
// NetworkPolicy of 2,000 exceptions spread over fd00::/8 (218,048 set
// elements), as `netpol compile -o nft` does.
func BenchmarkAdversarialExceptsRuleset(b *testing.B) {
	ir := compileObjects(b, synth.ExceptPolicy(2000))
	var text string
	for b.Loop() {
		var err error
		if text, err = nft.Ruleset(ir); err != nil {
			b.Fatal(err)
		}
	}
	_, elements := rulesetSize(text)
	b.ReportMetric(float64(elements), "elements")
}

// exceptsIR is the IR of the 56 KB policy of 2,000 exceptions spread over
// fd00::/8, with its ipBlock's set.
func exceptsIR(t *testing.T) (*compile.IR, *compile.AddrSet) {
	t.Helper()
	ir := compileObjects(t, synth.ExceptPolicy(2000))
	if len(ir.Sets) != 1 {
		t.Fatalf("%d sets, want 1", len(ir.Sets))
	}
	return ir, ir.Sets[0]
}

// TestAdversarialExceptsRuleset: the ipBlock of 2,000 exceptions is 2,001
// ranges in the kernel, one between each two exceptions (218,060 elements,
// one per prefix of the difference, took nft 19.5 s and 630 MB to load).
func TestAdversarialExceptsRuleset(t *testing.T) {
	empty, err := nft.Ruleset(&compile.IR{Node: synth.HostileNode})
	if err != nil {
		t.Fatal(err)
	}
	_, baseElements := rulesetSize(empty)
	ir, _ := exceptsIR(t)
	text, err := nft.Ruleset(ir)
	if err != nil {
		t.Fatal(err)
	}
	// The ranges, and the pod's entry in the ingress map.
	if _, elements := rulesetSize(text); elements-baseElements != 2002 {
		t.Errorf("%d elements beyond an empty table's %d, want 2,002 (2,001 ranges, the pod's map entry)", elements-baseElements, baseElements)
	}
}

// TestLabAdversarialExceptsKernel: the kernel takes the 2,001 ranges, and
// holds the addresses between the exceptions and not the exceptions.
func TestLabAdversarialExceptsKernel(t *testing.T) {
	ir, set := exceptsIR(t)
	var except []netip.Prefix
	for _, o := range synth.ExceptPolicy(2000) {
		if np, ok := o.Value.(*networkingv1.NetworkPolicy); ok {
			for _, e := range np.Spec.Ingress[0].From[0].IPBlock.Except {
				except = append(except, netip.MustParsePrefix(e))
			}
		}
	}
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		if _, err := nft.New(nf).Sync(ctx, ir); err != nil {
			t.Fatal(err)
		}
		els, err := nf.ListElements(ctx, "set", set.Name+"-6")
		if err != nil {
			t.Fatal(err)
		}
		if len(els) != 2001 {
			t.Errorf("the kernel's set holds %d elements, want 2001", len(els))
		}
		has := func(a netip.Addr) bool {
			err := exec.Command("nft", "get", "element", "inet", nft.TableName, set.Name+"-6", "{ "+a.String()+" }").Run()
			return err == nil
		}
		for _, i := range []int{0, 1, 999, 1999} {
			a := except[i].Addr()
			if has(a) {
				t.Errorf("exception %v is in the kernel's set", a)
			}
			if !has(a.Prev()) || !has(a.Next()) {
				t.Errorf("the neighbours of exception %v are not both in the kernel's set", a)
			}
		}
	})
}

// TestLabAdversarialHostileUpdates: a running node whose element changes
// go over netlink takes the hostile policies as updates too (the ranges of
// a static set go through nft, which speaks them), and after each its
// kernel holds what nft loads from scratch for the same IR.
func TestLabAdversarialHostileUpdates(t *testing.T) {
	quiet := compileObjects(t, synth.PeersPortsPolicy(1, 1))
	inNewNetns(t, func(nf knftables.Interface) {
		r := nft.New(nf)
		r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
		r.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
		ctx := context.Background()
		for _, step := range []struct {
			name string
			ir   *compile.IR
		}{
			{"a small policy", quiet},
			{"2,000 exceptions", compileObjects(t, synth.ExceptPolicy(2000))},
			{"1,000 peers x 1,000 ports", compileObjects(t, synth.PeersPortsPolicy(1000, 1000))},
			{"the small policy again", quiet},
		} {
			if _, err := r.Sync(ctx, step.ir); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			compareWithScratch(t, step.name, step.ir)
		}
	})
}
