package nft_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/l4"
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
// set of peers (pods, ipBlocks), family and port range (named ports resolved: http is 8080 on the
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
// objects replaces them in one transaction and leaves none behind, but the
// connections held in the cut sets stay held.
func TestSyncRestartReconciles(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	ctx := context.Background()
	r := nft.New(fake)
	if _, err := r.Sync(ctx, compileYAML(t, cluster)); err != nil {
		t.Fatal(err)
	}
	held := l4.Conn{Proto: l4.UDP, Src: netip.MustParseAddrPort("198.18.1.1:5000"), Dst: netip.MustParseAddrPort("198.18.1.2:53")}
	if err := r.Hold(ctx, []l4.Conn{held}); err != nil {
		t.Fatal(err)
	}
	noPolicy := cluster[:strings.Index(cluster, "---\napiVersion: networking.k8s.io/v1")]
	if _, err := nft.New(fake).Sync(ctx, compileYAML(t, noPolicy)); err != nil {
		t.Fatal(err)
	}
	chains, _ := fake.List(ctx, "chain")
	sets, _ := fake.List(ctx, "set")
	sort.Strings(chains)
	sort.Strings(sets)
	if strings.Join(chains, ",") != "egress,forward,ingress,input,output" || strings.Join(sets, ",") != "cut-4,cut-6,cut-pairs-4,cut-pairs-6" {
		t.Errorf("after restart without policies: chains %v, sets %v; want only the fixed chains and the cut sets", chains, sets)
	}
	if got := cutElements(t, fake, "cut-4"); got != "198.18.1.1 . 198.18.1.2 . udp . 5000 . 53" {
		t.Errorf("cut-4 after the restart: %q, want the held connection", got)
	}
	if got, err := nft.New(fake).Held(ctx); err != nil || len(got) != 1 || got[0] != held {
		t.Errorf("a new renderer's Held: %v %v, want %v", got, err, held)
	}
}

// TestHoldAndRelease: held connections go to the set of their family;
// releasing one that expired already is no error.
func TestHoldAndRelease(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	ctx := context.Background()
	r := nft.New(fake)
	if _, err := r.Sync(ctx, compileYAML(t, cluster)); err != nil {
		t.Fatal(err)
	}
	c4 := l4.Conn{Proto: l4.TCP, Src: netip.MustParseAddrPort("198.18.1.1:40000"), Dst: netip.MustParseAddrPort("198.18.1.2:80")}
	c6 := l4.Conn{Proto: l4.SCTP, Src: netip.MustParseAddrPort("[fd00::1]:7"), Dst: netip.MustParseAddrPort("[fd00::2]:9")}
	if err := r.Hold(ctx, []l4.Conn{c4, c6}); err != nil {
		t.Fatal(err)
	}
	if got4, got6 := cutElements(t, fake, "cut-4"), cutElements(t, fake, "cut-6"); got4 != "198.18.1.1 . 198.18.1.2 . tcp . 40000 . 80" || got6 != "fd00::1 . fd00::2 . sctp . 7 . 9" {
		t.Errorf("held: cut-4 %q, cut-6 %q", got4, got6)
	}
	ping := l4.Conn{Proto: l4.ICMP, Src: netip.MustParseAddrPort("198.18.1.5:0"), Dst: netip.MustParseAddrPort("198.18.1.6:0")}
	gre := l4.Conn{Proto: l4.Unported, Number: 47, Src: netip.MustParseAddrPort("198.18.1.7:0"), Dst: netip.MustParseAddrPort("198.18.1.8:0")}
	if err := r.Hold(ctx, []l4.Conn{ping, gre}); err != nil {
		t.Fatal(err)
	}
	if got4, pairs := cutElements(t, fake, "cut-4"), cutElements(t, fake, "cut-pairs-4"); got4 != "198.18.1.1 . 198.18.1.2 . tcp . 40000 . 80" || pairs != "198.18.1.7 . 198.18.1.8 . 47" {
		t.Errorf("a ping and a GRE tunnel held: cut-4 %q, cut-pairs-4 %q; want no ping (it needs no hold) and the tunnel's pair", got4, pairs)
	}
	gone := l4.Conn{Proto: l4.UDP, Src: netip.MustParseAddrPort("198.18.1.3:1"), Dst: netip.MustParseAddrPort("198.18.1.4:2")}
	if err := r.Release(ctx, []l4.Conn{c4, gone}); err != nil {
		t.Fatal(err)
	}
	if got := cutElements(t, fake, "cut-4"); got != "" {
		t.Errorf("cut-4 after the release: %q, want nothing", got)
	}
}

func cutElements(t *testing.T, fake *knftables.Fake, set string) string {
	t.Helper()
	els, err := fake.ListElements(context.Background(), "set", set)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range els {
		out = append(out, strings.Join(e.Key, " . "))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestBaseChains pins the fixed part of the table: replies first, then the
// connections that a policy change cut, dropped both ways (exactly, and by
// address pair past the cut sets' room), in every hook, the node's own
// output too; then IPv6 neighbour discovery with the node never filtered
// (without it an egress-isolated pod could not even resolve its gateway),
// then the pod interface checks, then the policy chains.
func TestBaseChains(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	ir := compileYAML(t, cluster)
	ir.PodInterfaces = []string{"veth*", "cni0"}
	if _, err := nft.New(fake).Sync(context.Background(), ir); err != nil {
		t.Fatal(err)
	}
	cut := []string{
		"ip saddr . ip daddr . meta l4proto . th sport . th dport @cut-4 update @cut-4 { ip saddr . ip daddr . meta l4proto . th sport . th dport } drop",
		"ip daddr . ip saddr . meta l4proto . th dport . th sport @cut-4 update @cut-4 { ip daddr . ip saddr . meta l4proto . th dport . th sport } drop",
		"ip saddr . ip daddr . meta l4proto @cut-pairs-4 update @cut-pairs-4 { ip saddr . ip daddr . meta l4proto } drop",
		"ip daddr . ip saddr . meta l4proto @cut-pairs-4 update @cut-pairs-4 { ip daddr . ip saddr . meta l4proto } drop",
		"ip6 saddr . ip6 daddr . meta l4proto . th sport . th dport @cut-6 update @cut-6 { ip6 saddr . ip6 daddr . meta l4proto . th sport . th dport } drop",
		"ip6 daddr . ip6 saddr . meta l4proto . th dport . th sport @cut-6 update @cut-6 { ip6 daddr . ip6 saddr . meta l4proto . th dport . th sport } drop",
		"ip6 saddr . ip6 daddr . meta l4proto @cut-pairs-6 update @cut-pairs-6 { ip6 saddr . ip6 daddr . meta l4proto } drop",
		"ip6 daddr . ip6 saddr . meta l4proto @cut-pairs-6 update @cut-pairs-6 { ip6 daddr . ip6 saddr . meta l4proto } drop",
	}
	first := append([]string{"ct state established,related accept"}, cut...)
	for chain, want := range map[string][]string{
		"forward": append(slices.Clone(first), `iifname "veth*" jump from-pod`, `oifname "veth*" jump to-pod`,
			`iifname "cni0" jump from-pod`, `oifname "cni0" jump to-pod`, "jump egress", "jump ingress"),
		"input": append(slices.Clone(first), "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } accept",
			`iifname "veth*" jump from-pod`, `iifname "cni0" jump from-pod`, "jump egress"),
		"output": first,
		"from-pod": {"ip saddr . iifname @pod-addrs-4 return", "ip6 saddr . iifname @pod-addrs-6 return",
			"icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } return", "drop"},
		"to-pod": {"ip daddr . oifname @pod-addrs-4 return", "ip6 daddr . oifname @pod-addrs-6 return",
			"icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } return", "drop"},
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

// TestPodAddresses: every local pod with an interface is in pod-addrs-4/-6
// by address and interface; one whose interface is unknown, or a name no
// renderer may write, is in neither (its packets are dropped).
func TestPodAddresses(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	ir := &compile.IR{Node: "n", PodInterfaces: []string{"veth*"}, Pods: []compile.LocalPod{
		{Pod: "x/a", IPs: []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("fd00::1")}, Interface: "veth1"},
		{Pod: "x/b", IPs: []netip.Addr{netip.MustParseAddr("198.18.0.2")}},
		{Pod: "x/c", IPs: []netip.Addr{netip.MustParseAddr("198.18.0.3")}, Interface: "veth\" ; accept"},
	}}
	if _, err := nft.New(fake).Sync(context.Background(), ir); err != nil {
		t.Fatal(err)
	}
	if got4, got6 := cutElements(t, fake, "pod-addrs-4"), cutElements(t, fake, "pod-addrs-6"); got4 != `198.18.0.1 . "veth1"` || got6 != `fd00::1 . "veth1"` {
		t.Errorf("pod-addrs-4 %q, pod-addrs-6 %q", got4, got6)
	}
}

// elementSink takes the batches that would go over netlink.
type elementSink struct{ unused []dataplane.Unused }

func (s *elementSink) Write(_ []dataplane.Element, u dataplane.Unused) error {
	s.unused = append(s.unused, u)
	return nil
}

// TestBatchDeletesWhatTheChangeLeaves: with an element writer, the chains
// and sets a change stops using are deleted by the element batch that
// points the pods elsewhere, not by an nft run of their own.
func TestBatchDeletesWhatTheChangeLeaves(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	r := nft.New(fake)
	sink := &elementSink{}
	r.WriteElementsWith(sink)
	ctx := context.Background()
	first := compileYAML(t, cluster)
	if _, err := r.Sync(ctx, first); err != nil {
		t.Fatal(err)
	}
	old := first.Tables[0].Name // a's table
	// Without the ipBlock peer, a's table changes (a new chain) and the
	// CIDR's set is no longer used.
	next := compileYAML(t, strings.Replace(cluster, ", {ipBlock: {cidr: 198.18.2.0/24, except: [198.18.2.128/25]}}", "", 1))
	cidr := first.Tables[0].Rules[1].Peer
	st, err := r.Sync(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Netlink || st.Chains != 1 {
		t.Fatalf("%+v, want one chain written and the elements over netlink", st)
	}
	want := dataplane.Unused{Chains: []string{old}, Sets: []string{cidr + "-4", cidr + "-6"}}
	if len(sink.unused) != 1 || !slices.Equal(sink.unused[0].Chains, want.Chains) || !slices.Equal(sink.unused[0].Sets, want.Sets) {
		t.Errorf("batches deleted %+v, want one batch deleting %+v", sink.unused, want)
	}
}

// TestDeleteLaterSplitsTheBatch: with DeleteLater the batch that points
// the pods elsewhere deletes nothing, and a second one deletes what it
// left unused.
func TestDeleteLaterSplitsTheBatch(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	r := nft.New(fake)
	r.DeleteLater(true)
	sink := &elementSink{}
	r.WriteElementsWith(sink)
	ctx := context.Background()
	first := compileYAML(t, cluster)
	if _, err := r.Sync(ctx, first); err != nil {
		t.Fatal(err)
	}
	old := first.Tables[0].Name
	cidr := first.Tables[0].Rules[1].Peer
	next := compileYAML(t, strings.Replace(cluster, ", {ipBlock: {cidr: 198.18.2.0/24, except: [198.18.2.128/25]}}", "", 1))
	if _, err := r.Sync(ctx, next); err != nil {
		t.Fatal(err)
	}
	want := dataplane.Unused{Chains: []string{old}, Sets: []string{cidr + "-4", cidr + "-6"}}
	if len(sink.unused) != 2 || len(sink.unused[0].Chains)+len(sink.unused[0].Sets) != 0 ||
		!slices.Equal(sink.unused[1].Chains, want.Chains) || !slices.Equal(sink.unused[1].Sets, want.Sets) {
		t.Errorf("batches deleted %+v, want a batch deleting nothing, then one deleting %+v", sink.unused, want)
	}
}

func TestNeedsDeleteLater(t *testing.T) {
	for release, want := range map[string]bool{
		"6.1.0-18-amd64": true, "5.15.0-91-generic": true, "4.19.0": true, "6.2.0": false,
		"6.18.3-cloud": false, "7.0": false, "": true, "weird": true,
	} {
		if got := nft.NeedsDeleteLater(release); got != want {
			t.Errorf("NeedsDeleteLater(%q) = %v, want %v", release, got, want)
		}
	}
}

// failingNft refuses transactions while fail is set.
type failingNft struct {
	*knftables.Fake
	fail bool
}

func (f *failingNft) Run(ctx context.Context, tx *knftables.Transaction) error {
	if f.fail {
		return errors.New("injected: refused")
	}
	return f.Fake.Run(ctx, tx)
}

// failingSink refuses element batches while fail is set.
type failingSink struct{ fail bool }

func (s *failingSink) Write([]dataplane.Element, dataplane.Unused) error {
	if s.fail {
		return errors.New("injected: batch refused")
	}
	return nil
}

// TestFaultSyncRecoversAfterFailures: after a refused nft run, and after a
// refused netlink batch (the adds of its phase applied, the batch not),
// the next sync reconciles with what the kernel holds and leaves exactly
// the table that a sync from scratch makes.
func TestFaultSyncRecoversAfterFailures(t *testing.T) {
	ctx := context.Background()
	first := compileYAML(t, cluster)
	next := compileYAML(t, strings.Replace(cluster, ", {ipBlock: {cidr: 198.18.2.0/24, except: [198.18.2.128/25]}}", "", 1))
	scratch := knftables.NewFake(knftables.InetFamily, nft.TableName)
	if _, err := nft.New(scratch).Sync(ctx, next); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		fail func(nf *failingNft, sink *failingSink)
	}{
		{"nft run refused", func(nf *failingNft, _ *failingSink) { nf.fail = true }},
		{"netlink batch refused", func(_ *failingNft, sink *failingSink) { sink.fail = true }},
	} {
		nf := &failingNft{Fake: knftables.NewFake(knftables.InetFamily, nft.TableName)}
		sink := &failingSink{}
		r := nft.New(nf)
		r.WriteElementsWith(sink)
		if _, err := r.Sync(ctx, first); err != nil {
			t.Fatal(err)
		}
		c.fail(nf, sink)
		if _, err := r.Sync(ctx, next); err == nil {
			t.Fatalf("%s: the sync succeeded", c.name)
		}
		nf.fail, sink.fail = false, false
		st, err := r.Sync(ctx, next)
		if err != nil || !st.Full {
			t.Fatalf("%s: the sync after: %+v %v, want a full reconcile", c.name, st, err)
		}
		if got, want := nf.Dump(), scratch.Dump(); got != want {
			t.Errorf("%s: the table after recovery differs from a sync from scratch:\n%s\nwant\n%s", c.name, got, want)
		}
	}
}
