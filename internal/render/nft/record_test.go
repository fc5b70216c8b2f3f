package nft_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/render/nft"
)

// TestRulesetRecord: with IR.Record, a new connection that reaches the end
// of the base chains (allowed both ways) and involves a local pod is
// logged to the record group as allowed; every drop of a table goes
// through record-deny, which logs it as denied and drops; an audited
// deny's log chain ends there too. Without Record none of it exists.
func TestRulesetRecord(t *testing.T) {
	ctx := context.Background()
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	r := nft.New(fake)
	ir := compileAudit(t, cluster+auditedANP+stagedNP)
	ir.Record = true
	if _, err := r.Sync(ctx, ir); err != nil {
		t.Fatal(err)
	}
	// A staged table decides nothing: its would-deny still returns.
	staged := tableOf(t, ir, "x/c", true)
	if got, want := chainRules(t, fake, "log-"+staged.DefaultAudit.ID), `limit rate 50/second burst 100 packets log prefix "np:`+staged.DefaultAudit.ID+`:" group 100`+"\nreturn"; got != want {
		t.Errorf("staged table's would-deny log chain under Record:\n%s\nwant:\n%s", got, want)
	}
	for chain, want := range map[string]string{
		"record": "ip saddr @record-local-4 goto record-allow\nip6 saddr @record-local-6 goto record-allow\n" +
			"ip daddr @record-local-4 goto record-allow\nip6 daddr @record-local-6 goto record-allow",
		"record-allow": "ip saddr . ip daddr . meta l4proto . th dport @record-allowed-4 return\n" +
			"ip6 saddr . ip6 daddr . meta l4proto . th dport @record-allowed-6 return\n" +
			`meta nfproto ipv4 limit rate 1000/second burst 1000 packets update @record-allowed-4 { ip saddr . ip daddr . meta l4proto . th dport } log prefix "np-rec:allow:" group 101` + "\n" +
			`meta nfproto ipv6 limit rate 1000/second burst 1000 packets update @record-allowed-6 { ip6 saddr . ip6 daddr . meta l4proto . th dport } log prefix "np-rec:allow:" group 101`,
		"record-deny": "ip saddr . ip daddr . meta l4proto . th dport @record-denied-4 drop\n" +
			"ip6 saddr . ip6 daddr . meta l4proto . th dport @record-denied-6 drop\n" +
			`meta nfproto ipv4 limit rate 1000/second burst 1000 packets update @record-denied-4 { ip saddr . ip daddr . meta l4proto . th dport } log prefix "np-rec:deny:" group 101` + "\n" +
			`meta nfproto ipv6 limit rate 1000/second burst 1000 packets update @record-denied-6 { ip6 saddr . ip6 daddr . meta l4proto . th dport } log prefix "np-rec:deny:" group 101` + "\n" +
			"drop",
	} {
		if got := chainRules(t, fake, chain); got != want {
			t.Errorf("chain %s:\n%s\nwant:\n%s", chain, got, want)
		}
	}
	if got := chainRules(t, fake, "forward"); !strings.HasSuffix(got, "\njump egress\njump ingress\nct state new jump record") {
		t.Errorf("forward chain does not end in the record jump:\n%s", got)
	}
	if got := chainRules(t, fake, "input"); !strings.HasSuffix(got, "\njump egress\nct state new jump record") {
		t.Errorf("input chain does not end in the record jump:\n%s", got)
	}
	els, _ := fake.ListElements(ctx, "set", "record-local-4")
	var local []string
	for _, e := range els {
		local = append(local, e.Key[0])
	}
	slices.Sort(local)
	if want := []string{"198.18.1.1", "198.18.1.2", "198.18.1.3"}; !slices.Equal(local, want) {
		t.Errorf("record-local-4 = %v, want %v", local, want)
	}

	// x/a's NetworkPolicy isolation drops through record-deny.
	a := tableOf(t, ir, "x/a", false)
	if got := chainRules(t, fake, a.Name); !strings.HasSuffix(got, "\ngoto record-deny") || strings.Contains(got, "drop") {
		t.Errorf("x/a's table does not drop through record-deny:\n%s", got)
	}
	// x/b's audited admin deny logs for the audit, then for the record.
	deny := tableOf(t, ir, "x/b", false).Rules[0].Audit
	if got, want := chainRules(t, fake, "log-"+deny.ID), `limit rate 50/second burst 100 packets log prefix "np:`+deny.ID+`:" group 100`+"\ngoto record-deny"; got != want {
		t.Errorf("audited deny's log chain:\n%s\nwant:\n%s", got, want)
	}
	if diff, err := r.Verify(ctx); diff != "" || err != nil {
		t.Errorf("Verify after a recording sync: %q, %v", diff, err)
	}
	// Every deny of the node goes through record-deny: emptied, they would
	// all return to the base chain's accept. Verify sees it.
	tx := fake.NewTransaction()
	tx.Flush(&knftables.Chain{Name: "record-deny"})
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if diff, err := r.Verify(ctx); diff != "chain record-deny has 0 rules, want 5" || err != nil {
		t.Errorf("Verify with record-deny emptied: %q, %v; want chain record-deny has 0 rules, want 5", diff, err)
	}
	r.Forget()
	if _, err := r.Sync(ctx, ir); err != nil {
		t.Fatal(err)
	}

	// Recording off: the chains, the set and the jump go.
	ir = compileAudit(t, cluster+auditedANP)
	if _, err := r.Sync(ctx, ir); err != nil {
		t.Fatal(err)
	}
	chains, _ := fake.List(ctx, "chain")
	sets, _ := fake.List(ctx, "set")
	if all := strings.Join(append(chains, sets...), ","); strings.Contains(all, "record") {
		t.Errorf("objects after recording stopped: %s", all)
	}
	if got := chainRules(t, fake, "forward"); strings.Contains(got, "record") {
		t.Errorf("forward chain after recording stopped:\n%s", got)
	}
	if got := chainRules(t, fake, tableOf(t, ir, "x/a", false).Name); !strings.HasSuffix(got, "\ndrop") {
		t.Errorf("x/a's table after recording stopped:\n%s", got)
	}
}
