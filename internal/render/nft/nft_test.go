package nft_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
)

const cluster = `
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Namespace
metadata: {name: x}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {app: a}}
spec: {nodeName: n1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: x, labels: {app: b}}
spec: {nodeName: n1}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: c, namespace: x, labels: {app: c}}
spec: {nodeName: n1}
status: {podIP: 198.18.1.3}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: a-from-b, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: b}}}, {ipBlock: {cidr: 198.18.2.0/24, except: [198.18.2.128/25]}}]
    ports: [{port: http}, {port: 9000, endPort: 9100}]
`

func compileYAML(t *testing.T, yaml string) *compile.IR {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("c.yaml", []byte(yaml)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return compile.Node(e, "n1")
}

// TestRulesetText pins the rules of a NetworkPolicy table: one rule per
// peer, family and port range (named ports resolved: http is 8080 on the
// pod), the isolation drop last.
func TestRulesetText(t *testing.T) {
	ir := compileYAML(t, cluster)
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	if _, err := nft.New(fake).Sync(context.Background(), ir); err != nil {
		t.Fatal(err)
	}
	if len(ir.Tables) != 1 {
		t.Fatalf("%d tables, want 1", len(ir.Tables))
	}
	chain := ir.Tables[0].Name
	rules, err := fake.ListRules(context.Background(), chain)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.Rule)
	}
	peerB, cidr := ir.Tables[0].Rules[0].Peer, ir.Tables[0].Rules[1].Peer
	want := []string{
		"ip saddr @" + peerB + "-4 meta l4proto tcp th dport 8080 return",
		"ip saddr @" + peerB + "-4 meta l4proto tcp th dport 9000-9100 return",
		"ip6 saddr @" + peerB + "-6 meta l4proto tcp th dport 8080 return",
		"ip6 saddr @" + peerB + "-6 meta l4proto tcp th dport 9000-9100 return",
		"ip saddr @" + cidr + "-4 meta l4proto tcp th dport 8080 return",
		"ip saddr @" + cidr + "-4 meta l4proto tcp th dport 9000-9100 return",
		"ip6 saddr @" + cidr + "-6 meta l4proto tcp th dport 8080 return",
		"ip6 saddr @" + cidr + "-6 meta l4proto tcp th dport 9000-9100 return",
		"drop",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("chain %s:\n%s\nwant:\n%s", chain, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if els := elements(t, fake, cidr+"-4"); els != "198.18.2.0/25" {
		t.Errorf("CIDR set = %s, want 198.18.2.0/25 (the /24 minus the upper /25)", els)
	}
	if els := elements(t, fake, peerB+"-4"); els != "198.18.1.2" {
		t.Errorf("pod set = %s, want 198.18.1.2", els)
	}
	if m, _ := fake.ListElements(context.Background(), "map", "ingress-4"); len(m) != 1 || m[0].Key[0] != "198.18.1.1" || m[0].Value[0] != "jump "+chain {
		t.Errorf("ingress-4 map = %v, want only 198.18.1.1 : jump %s", m, chain)
	}
}

func elements(t *testing.T, fake *knftables.Fake, set string) string {
	t.Helper()
	els, err := fake.ListElements(context.Background(), "set", set)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range els {
		out = append(out, strings.Join(e.Key, " . "))
	}
	return strings.Join(out, ",")
}

// TestSyncSendsOnlyTheDifference: a pod joining a peer selector is one set
// element; the same input again is no transaction at all.
func TestSyncSendsOnlyTheDifference(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	r := nft.New(fake)
	ctx := context.Background()
	if _, err := r.Sync(ctx, compileYAML(t, cluster)); err != nil {
		t.Fatal(err)
	}
	st, err := r.Sync(ctx, compileYAML(t, cluster))
	if err != nil || st.Operations != 0 {
		t.Fatalf("same input again: %+v, %v; want no operations", st, err)
	}
	relabelled := strings.Replace(cluster, "metadata: {name: c, namespace: x, labels: {app: c}}", "metadata: {name: c, namespace: x, labels: {app: b}}", 1)
	st, err = r.Sync(ctx, compileYAML(t, relabelled))
	if err != nil {
		t.Fatal(err)
	}
	if st.Operations != 1 || st.Elements != 1 || st.Chains != 0 {
		t.Errorf("pod c relabelled app=b: %+v, want 1 operation (one set element) and no chain", st)
	}
	dump := fake.Dump()
	if !strings.Contains(dump, "198.18.1.3") {
		t.Errorf("pod c's address is not in any set after the relabel:\n%s", dump)
	}
}

// TestSyncRestartReconciles: a new renderer over a table holding stale
// objects replaces them in one transaction and leaves none behind.
func TestSyncRestartReconciles(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	ctx := context.Background()
	if _, err := nft.New(fake).Sync(ctx, compileYAML(t, cluster)); err != nil {
		t.Fatal(err)
	}
	noPolicy := cluster[:strings.Index(cluster, "---\napiVersion: networking.k8s.io/v1")]
	if _, err := nft.New(fake).Sync(ctx, compileYAML(t, noPolicy)); err != nil {
		t.Fatal(err)
	}
	chains, _ := fake.List(ctx, "chain")
	sets, _ := fake.List(ctx, "set")
	sort.Strings(chains)
	if strings.Join(chains, ",") != "egress,forward,ingress,input" || len(sets) != 0 {
		t.Errorf("after restart without policies: chains %v, sets %v; want only the fixed chains and no sets", chains, sets)
	}
}

// TestBaseChains pins the fixed part of the table: replies first, IPv6
// neighbour discovery with the node never filtered (without it an
// egress-isolated pod could not even resolve its gateway), then the policy
// chains.
func TestBaseChains(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	if _, err := nft.New(fake).Sync(context.Background(), compileYAML(t, cluster)); err != nil {
		t.Fatal(err)
	}
	for chain, want := range map[string][]string{
		"forward": {"ct state established,related accept", "jump egress", "jump ingress"},
		"input": {"ct state established,related accept",
			"icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } accept", "jump egress"},
	} {
		rules, err := fake.ListRules(context.Background(), chain)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rules {
			got = append(got, r.Rule)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("chain %s:\n%s\nwant:\n%s", chain, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// elementSink takes the element batches that would go over netlink.
type elementSink struct{ batches int }

func (s *elementSink) Write([]dataplane.Element) error { s.batches++; return nil }

// TestLeftoversAreBounded: with an element writer, the chain a change stops
// using stays (nothing refers to it; deleting costs the change time) until
// Collect, or until a burst of changes leaves more than 64 of them: then
// the next change deletes them all in its nft run.
func TestLeftoversAreBounded(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	r := nft.New(fake)
	sink := &elementSink{}
	r.WriteElementsWith(sink)
	ctx := context.Background()
	if _, err := r.Sync(ctx, compileYAML(t, cluster)); err != nil {
		t.Fatal(err)
	}
	chains := func() int {
		names, err := fake.List(ctx, "chain")
		if err != nil {
			t.Fatal(err)
		}
		return len(names)
	}
	// forward, input, ingress, egress and a's table.
	if n := chains(); n != 5 {
		t.Fatalf("%d chains after the first sync, want 5", n)
	}
	for i := 1; i <= 66; i++ {
		// Each end port makes a's table anew: one new chain, the old one left.
		yaml := strings.Replace(cluster, "endPort: 9100", fmt.Sprintf("endPort: %d", 9100+i), 1)
		st, err := r.Sync(ctx, compileYAML(t, yaml))
		if err != nil {
			t.Fatal(err)
		}
		wantCollected, wantLeft := 0, i
		if i == 66 { // 65 left before it: over the bound
			wantCollected, wantLeft = 65, 1
		}
		if st.Chains != 1 || st.Collected != wantCollected || st.Left != wantLeft || !st.Netlink {
			t.Fatalf("change %d: %+v, want 1 chain, %d collected, %d left, over netlink", i, st, wantCollected, wantLeft)
		}
		if n := chains(); n != 5+wantLeft {
			t.Fatalf("change %d: %d chains, want %d", i, n, 5+wantLeft)
		}
	}
	if sink.batches != 66 {
		t.Errorf("%d element batches, want one per change (66)", sink.batches)
	}
	if err := r.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if n := chains(); n != 5 {
		t.Errorf("%d chains after Collect, want 5", n)
	}
	if st, err := r.Sync(ctx, compileYAML(t, strings.Replace(cluster, "endPort: 9100", "endPort: 9166", 1))); err != nil || st.Operations != 0 {
		t.Errorf("the same IR after Collect: %+v, %v; want no operations", st, err)
	}
}
