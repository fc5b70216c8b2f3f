package compile_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/render/nft"
)

const collisionCluster = `
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
metadata: {name: victim, namespace: x, labels: {app: victim}}
spec: {nodeName: n1}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: friend, namespace: x, labels: {app: friend}}
spec: {nodeName: n1}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: attacker, namespace: x, labels: {app: attacker}}
spec: {nodeName: n1}
status: {podIP: 198.18.1.3}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: victim, namespace: x, annotations: {netpol.io/audit: all}}
spec:
  podSelector: {matchLabels: {app: victim}}
  ingress: [{from: [{podSelector: {matchLabels: {app: friend}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: attacker, namespace: x, annotations: {netpol.io/audit: all}}
spec:
  podSelector: {matchLabels: {app: attacker}}
  ingress: [{from: [{podSelector: {matchLabels: {app: attacker}}}]}]
`

// TestAdversarialNameCollision: when two keys hash to the same 48 bits
// (forced here; a 2^24 search finds such a pair of peers), they get two
// names: two peers two sets, each with its own addresses, two tables two
// chains, two audits two log chains with their own verdicts. Every rule
// takes its own: the attacker's pod is not let into the victim. Before,
// the first key won the name and both rules took its set.
func TestAdversarialNameCollision(t *testing.T) {
	for _, c := range []struct {
		what    string
		collide func(string) bool
	}{
		{"sets", func(s string) bool {
			return strings.HasPrefix(s, "pods ") && (strings.HasSuffix(s, "app=friend") || strings.HasSuffix(s, "app=attacker"))
		}},
		{"tables", func(s string) bool { return strings.HasPrefix(s, "ingress drop") }},
		{"audits", func(s string) bool { return strings.HasPrefix(s, "allow") || strings.HasPrefix(s, "deny") }},
	} {
		t.Run(c.what, func(t *testing.T) {
			restore := compile.SetShortHash(func(s string) string {
				if c.collide(s) {
					return "c0111de0c0de"
				}
				return compile.ShortHash(s)
			})
			defer restore()
			var k compile.Compiler
			compileNodeWith(t, &k, collisionCluster)
			ir := compileNodeWith(t, &k, collisionCluster) // a second pass keeps the names
			checkCollision(t, ir)
		})
	}
}

func checkCollision(t *testing.T, ir *compile.IR) {
	t.Helper()
	names := map[string]string{}
	for _, s := range ir.Sets {
		names[s.Key] = s.Name
	}
	friend, attacker := names["pods ns=x app=friend"], names["pods ns=x app=attacker"]
	if friend == "" || attacker == "" || friend == attacker {
		t.Errorf("sets %v: want one for each peer, with two names", names)
	}
	if len(ir.Tables) != 2 || ir.Tables[0].Name == ir.Tables[1].Name {
		t.Errorf("%d tables, want two of two names", len(ir.Tables))
	}
	// Each table logs its allow and its isolation: four audits, four IDs.
	ids := map[string]bool{}
	for _, tb := range ir.Tables {
		for _, a := range []*compile.Audit{tb.Rules[0].Audit, tb.DefaultAudit} {
			if _, ok := compile.AuditID(a.LogPrefix()); !ok {
				t.Errorf("audit ID %q is not one", a.ID)
			}
			ids[a.ID] = true
		}
	}
	if len(ids) != 4 {
		t.Errorf("%d audit IDs, want 4", len(ids))
	}
	// The kernel's log chains: the allows return, the isolations drop.
	text, err := nft.Ruleset(ir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range ir.Tables {
		for _, want := range []string{
			"add rule inet netpol log-" + tb.Rules[0].Audit.ID + " return",
			"add rule inet netpol log-" + tb.DefaultAudit.ID + " drop",
		} {
			if !strings.Contains(text, want+"\n") {
				t.Errorf("the ruleset has no %q", want)
			}
		}
	}
	ev := ir.Evaluator()
	for _, c := range []struct {
		from, to string
		allowed  bool
	}{
		{"198.18.1.2", "198.18.1.1", true},  // friend -> victim
		{"198.18.1.3", "198.18.1.1", false}, // attacker -> victim
		{"198.18.1.3", "198.18.1.3", true},  // attacker -> attacker (its own policy)
		{"198.18.1.2", "198.18.1.3", false}, // friend -> attacker
	} {
		_, in := ev.Decide(netip.MustParseAddr(c.from), netip.MustParseAddr(c.to), l4.Port{Proto: l4.TCP, Num: 80})
		if in.Allowed != c.allowed {
			t.Errorf("%s -> %s: allowed %v, want %v", c.from, c.to, in.Allowed, c.allowed)
		}
	}
}
