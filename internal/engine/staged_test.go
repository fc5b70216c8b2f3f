package engine_test

import (
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
)

// TestStaged checks that a staged policy is left out of the enforced verdict
// and decides the staged one, in every tier.
func TestStaged(t *testing.T) {
	const stagedDenyY = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-y, annotations: {netpol.io/staged: "true"}}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - {name: deny-from-y, action: Deny, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
`
	const stagedIsolateX = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: only-x, namespace: x, annotations: {netpol.io/staged: "true"}}
spec: {podSelector: {}, ingress: [{from: [{podSelector: {}}]}]}
`
	const enforcedAllowY = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-y, namespace: x}
spec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {ns: "y"}}}]}]}
`
	const stagedBaselineDeny = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default, annotations: {netpol.io/staged: "true"}}
spec:
  subject: {namespaces: {}}
  ingress:
  - {name: deny-all, action: Deny, from: [{namespaces: {}}]}
`
	tests := []struct {
		name                   string
		policies               string
		from, to               string
		enforced, staged       bool
		enforcedTrace, stTrace string // ingress traces, in sideTrace notation
	}{
		{"staged ANP deny", stagedDenyY, "y/a", "x/a", true, false,
			"Default Allow", "Admin ANP/deny-y deny-from-y Deny"},
		{"staged ANP deny, other source", stagedDenyY, "x/b", "x/a", true, true,
			"Default Allow", "Default Allow"},
		{"staged NP isolates", stagedIsolateX, "y/a", "x/a", true, false,
			"Default Allow", "NetworkPolicy Deny isolatedBy=NP/x/only-x"},
		{"staged NP isolates, its rule allows", stagedIsolateX, "x/b", "x/a", true, true,
			"Default Allow", "NetworkPolicy NP/x/only-x ingress[0] Allow"},
		{"staged NP next to an enforced one: both isolate in the staged verdict", stagedIsolateX + "---\n" + enforcedAllowY, "y/a", "x/a", true, true,
			"NetworkPolicy NP/x/allow-y ingress[0] Allow", "NetworkPolicy NP/x/allow-y ingress[0] Allow"},
		{"staged baseline deny", stagedBaselineDeny, "y/a", "x/a", true, false,
			"Default Allow", "Baseline BANP/default deny-all Deny"},
		{"staged baseline deny under an enforced NP", stagedBaselineDeny + "---\n" + enforcedAllowY, "y/a", "x/a", true, true,
			"NetworkPolicy NP/x/allow-y ingress[0] Allow", "NetworkPolicy NP/x/allow-y ingress[0] Allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := semEngine(t, semTopology+"\n---\n"+tt.policies, engine.Options{})
			st := e.Staged()
			if st == nil {
				t.Fatal("Staged() is nil with a staged policy")
			}
			for _, c := range []struct {
				what  string
				e     *engine.Engine
				want  bool
				trace string
			}{{"enforced", e, tt.enforced, tt.enforcedTrace}, {"staged", st, tt.staged, tt.stTrace}} {
				src, _ := c.e.Endpoint(tt.from)
				dst, _ := c.e.Endpoint(tt.to)
				f := engine.Flow{Src: src, Dst: dst, Port: l4.Port{Proto: l4.TCP, Num: 80}}
				v := c.e.Decide(f)
				if v.Allowed != c.want || c.e.Allowed(f) != c.want {
					t.Errorf("%s: allowed=%v (fast %v), want %v", c.what, v.Allowed, c.e.Allowed(f), c.want)
				}
				if got := sideTrace(v.Ingress); got != c.trace {
					t.Errorf("%s ingress trace %q, want %q", c.what, got, c.trace)
				}
			}
		})
	}
	t.Run("nothing staged: no second engine", func(t *testing.T) {
		if e := semEngine(t, semTopology+"\n---\n"+enforcedAllowY, engine.Options{}); e.Staged() != nil {
			t.Error("Staged() is not nil without staged policies")
		}
	})
}
