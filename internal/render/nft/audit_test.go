package nft_test

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
)

const auditedANP = `
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-c, annotations: {netpol.io/audit: deny}}
spec:
  priority: 10
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: b}}}}
  ingress:
  - {name: deny-from-c, action: Deny, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: c}}}}]}
`

const stagedNP = `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: isolate-c, namespace: x, annotations: {netpol.io/staged: "true"}}
spec: {podSelector: {matchLabels: {app: c}}, policyTypes: [Ingress]}
`

// compileAudit compiles node n1 as the agent does: staged tables added.
func compileAudit(t *testing.T, yaml string) *compile.IR {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("c.yaml", []byte(yaml)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ir := compile.Node(e, "n1")
	compile.AddStaged(ir, e)
	return ir
}

func chainRules(t *testing.T, fake *knftables.Fake, chain string) string {
	t.Helper()
	rules, err := fake.ListRules(context.Background(), chain)
	if err != nil {
		t.Fatalf("chain %s: %v", chain, err)
	}
	var out []string
	for _, r := range rules {
		out = append(out, r.Rule)
	}
	return strings.Join(out, "\n")
}

func tableOf(t *testing.T, ir *compile.IR, pod string, staged bool) *compile.Table {
	t.Helper()
	for _, p := range ir.Pods {
		if p.Pod != pod {
			continue
		}
		name := p.Ingress
		if staged {
			name = p.StagedIngress
		}
		for _, tb := range ir.Tables {
			if tb.Name == name {
				return tb
			}
		}
	}
	t.Fatalf("no ingress table (staged %v) for %s", staged, pod)
	return nil
}

// TestRulesetAudit: an audited deny ends in a goto to its log chain (the
// rate-limited log, then the verdict); a staged NP gets a log-only chain,
// looked up before the enforced one, that logs would-deny and returns;
// without the staged policy the staged maps are deleted.
func TestRulesetAudit(t *testing.T) {
	ctx := context.Background()
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	r := nft.New(fake)
	ir := compileAudit(t, cluster+auditedANP+stagedNP)
	if _, err := r.Sync(ctx, ir); err != nil {
		t.Fatal(err)
	}

	b := tableOf(t, ir, "x/b", false)
	deny := b.Rules[0].Audit
	if deny == nil || deny.Verdict != compile.VerdictDeny || deny.Rule != "deny-from-c" || deny.Policy.Name != "deny-c" || deny.Tier != "Admin" || deny.Direction != "ingress" {
		t.Fatalf("audit of x/b's deny rule: %+v", deny)
	}
	peer := b.Rules[0].Peer
	if got, want := chainRules(t, fake, b.Name), "ip saddr @"+peer+"-4 goto log-"+deny.ID+"\nip6 saddr @"+peer+"-6 goto log-"+deny.ID; got != want {
		t.Errorf("chain %s:\n%s\nwant:\n%s", b.Name, got, want)
	}
	if got, want := chainRules(t, fake, "log-"+deny.ID), `limit rate 50/second burst 100 packets log prefix "np:`+deny.ID+`:" group 100`+"\ndrop"; got != want {
		t.Errorf("log chain:\n%s\nwant:\n%s", got, want)
	}

	c := tableOf(t, ir, "x/c", true)
	would := c.DefaultAudit
	if !c.LogOnly || would == nil || would.Verdict != compile.VerdictWouldDeny || len(would.IsolatedBy) != 1 || would.IsolatedBy[0].Name != "isolate-c" {
		t.Fatalf("staged table of x/c: log-only %v, default audit %+v", c.LogOnly, would)
	}
	if got, want := chainRules(t, fake, c.Name), "goto log-"+would.ID; got != want {
		t.Errorf("staged chain %s:\n%s\nwant:\n%s", c.Name, got, want)
	}
	if got, want := chainRules(t, fake, "log-"+would.ID), `limit rate 50/second burst 100 packets log prefix "np:`+would.ID+`:" group 100`+"\nreturn"; got != want {
		t.Errorf("would-deny log chain:\n%s\nwant:\n%s", got, want)
	}
	if got := chainRules(t, fake, "ingress"); !strings.HasPrefix(got, "ip daddr vmap @staged-ingress-4\nip6 daddr vmap @staged-ingress-6\nip daddr vmap @ingress-4") {
		t.Errorf("ingress chain does not look up the staged map first:\n%s", got)
	}
	if m, _ := fake.ListElements(ctx, "map", "staged-ingress-4"); len(m) != 1 || m[0].Key[0] != "198.18.1.3" || m[0].Value[0] != "jump "+c.Name {
		t.Errorf("staged-ingress-4 = %v, want only 198.18.1.3 : jump %s", m, c.Name)
	}

	// The staged policy goes: its maps and chains go with it.
	if _, err := r.Sync(ctx, compileAudit(t, cluster+auditedANP)); err != nil {
		t.Fatal(err)
	}
	maps, _ := fake.List(ctx, "map")
	if strings.Contains(strings.Join(maps, ","), "staged") {
		t.Errorf("maps after the staged policy went: %v", maps)
	}
	if got := chainRules(t, fake, "ingress"); strings.Contains(got, "staged") {
		t.Errorf("ingress chain after the staged policy went:\n%s", got)
	}
}
