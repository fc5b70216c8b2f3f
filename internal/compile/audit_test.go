package compile_test

import (
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

func TestAuditID(t *testing.T) {
	tests := []struct {
		prefix, id string
		ok         bool
	}{
		{"np:0123456789ab:", "0123456789ab", true},
		{"np:0123456789ab", "", false},  // no closing colon
		{"xx:0123456789ab:", "", false}, // not netpol's
		{"np:0123456789abc:", "", false},
		{"np:0123456789AB:", "", false}, // IDs are lower-case hex
		{"np::", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		id, ok := compile.AuditID(tt.prefix)
		if id != tt.id || ok != tt.ok {
			t.Errorf("AuditID(%q) = %q, %v; want %q, %v", tt.prefix, id, ok, tt.id, tt.ok)
		}
	}
	a := &compile.Audit{ID: "0123456789ab"}
	if got := a.LogPrefix(); got != "np:0123456789ab:" {
		t.Errorf("LogPrefix = %q", got)
	}
}

const auditCluster = `
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
spec: {nodeName: n1}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: x, labels: {app: b}}
spec: {nodeName: n1}
status: {podIP: 198.18.1.2}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: anp}
spec:
  priority: 1
  subject: {namespaces: {}}
  ingress:
  - {name: allow-b, action: Allow, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: b}}}}]}
  - {name: deny-rest, action: Deny, from: [{namespaces: {}}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: iso, namespace: x, annotations: {netpol.io/audit: deny}}
spec: {podSelector: {matchLabels: {app: a}}, policyTypes: [Egress]}
`

func compileNode(t *testing.T, yaml string) *compile.IR {
	t.Helper()
	return compileNodeWith(t, new(compile.Compiler), yaml)
}

func compileNodeWith(t *testing.T, c *compile.Compiler, yaml string) *compile.IR {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("c.yaml", []byte(yaml)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Node(e, "n1")
}

// TestAudits: the NP's audit annotation logs its isolation; the ANP is not
// annotated until AuditDenies marks its deny (and only its deny).
func TestAudits(t *testing.T) {
	ir := compileNode(t, auditCluster)
	summary := func() map[string]int {
		out := map[string]int{}
		for _, a := range compile.Audits(ir) {
			what := string(a.Verdict) + " " + a.Direction + " " + a.Tier + " " + a.Rule
			for _, r := range a.IsolatedBy {
				what += " isolated by " + r.String()
			}
			out[what]++
		}
		return out
	}
	if got := summary(); len(got) != 1 || got["deny egress NetworkPolicy  isolated by NetworkPolicy x/iso"] != 1 {
		t.Errorf("annotated audits: %v", got)
	}
	ir = compileNodeWith(t, &compile.Compiler{AuditDenies: true}, auditCluster)
	got := summary()
	want := map[string]int{
		"deny egress NetworkPolicy  isolated by NetworkPolicy x/iso": 1,
		"deny ingress Admin deny-rest":                               1,
	}
	if len(got) != len(want) || got["deny ingress Admin deny-rest"] != 1 || got["deny egress NetworkPolicy  isolated by NetworkPolicy x/iso"] != 1 {
		t.Errorf("with AuditDenies: %v, want %v", got, want)
	}
	// IDs are the same in another compile of the same input.
	again := compileNodeWith(t, &compile.Compiler{AuditDenies: true}, auditCluster)
	for id := range compile.Audits(ir) {
		if compile.Audits(again)[id] == nil {
			t.Errorf("audit %s is not in a second compile", id)
		}
	}
}

// TestAuditNamesTheTable: whether a table logs is part of its name, so that
// a renderer that keeps the chains of the names it has seen rewrites them
// when an audit annotation or --audit-denies changes what a table logs.
func TestAuditNamesTheTable(t *testing.T) {
	names := func(ir *compile.IR) map[string]string {
		out := map[string]string{}
		for _, p := range ir.Pods {
			out[p.Pod] = p.Ingress + " " + p.Egress
		}
		return out
	}
	plain := names(compileNode(t, strings.Replace(auditCluster, "annotations: {netpol.io/audit: deny}", "annotations: {}", 1)))
	annotated := names(compileNode(t, auditCluster))
	denies := names(compileNodeWith(t, &compile.Compiler{AuditDenies: true}, auditCluster))
	// x/a: iso's annotation logs its egress isolation, and every deny adds
	// the admin deny of its ingress.
	if a := "x/a"; plain[a] == annotated[a] || annotated[a] == denies[a] || plain[a] == denies[a] {
		t.Errorf("x/a: tables without audit %q, with iso's %q, with every deny %q; want three different pairs", plain[a], annotated[a], denies[a])
	}
	// x/b: iso does not select it; only every deny changes its table.
	if b := "x/b"; plain[b] != annotated[b] || annotated[b] == denies[b] {
		t.Errorf("x/b: tables without audit %q, with iso's %q, with every deny %q; want the first two equal, the third different", plain[b], annotated[b], denies[b])
	}
}
