package engine_test

import (
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/policy"
)

// countsPolicies: an egress-only NetworkPolicy for x/a, and an admin
// policy with ingress rules only, for every pod.
const countsPolicies = `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: a-out, namespace: x}
spec:
  podSelector: {matchLabels: {app: a}}
  policyTypes: [Egress]
  egress: [{to: [{podSelector: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: admin-in}
spec:
  priority: 5
  subject: {namespaces: {}}
  ingress: [{name: allow-y, action: Allow, from: [{namespaces: {matchLabels: {ns: "y"}}}]}]
`

// TestCountsAndIsolated: which policies' rules count, and which pods are
// isolated, as the walk has it, for diff and lint: a NetworkPolicy counts
// where it isolates; under the legacy isolation every NetworkPolicy's
// ingress counts and only the annotated namespace isolates; an admin
// policy always counts and never isolates.
func TestCountsAndIsolated(t *testing.T) {
	for _, tc := range []struct {
		name       string
		topology   string
		opts       engine.Options
		npCounts   [2]bool // a-out, by policy.Direction (Ingress, Egress)
		aIsolated  [2]bool
		bIsolated  [2]bool
		adminCount [2]bool
	}{
		{"plain", semTopology, engine.Options{}, [2]bool{false, true}, [2]bool{false, true}, [2]bool{false, false}, [2]bool{true, true}},
		{"legacy, x annotated", semTopologyDefaultDenyX, engine.Options{LegacyNamespaceIsolation: true},
			[2]bool{true, true}, [2]bool{true, true}, [2]bool{true, false}, [2]bool{true, true}},
		{"legacy, nothing annotated", semTopology, engine.Options{LegacyNamespaceIsolation: true},
			[2]bool{true, true}, [2]bool{false, true}, [2]bool{false, false}, [2]bool{true, true}},
	} {
		e := semEngine(t, tc.topology+countsPolicies, tc.opts)
		var np, admin *policy.Policy
		for _, p := range e.Policies().Policies() {
			switch p.Ref.Name {
			case "a-out":
				np = p
			case "admin-in":
				admin = p
			}
		}
		a, b := e.Cluster().Pod("x/a"), e.Cluster().Pod("x/b")
		for _, d := range policy.Directions {
			if got := e.Counts(np, d); got != tc.npCounts[d] {
				t.Errorf("%s: a-out counts for %s: %v, want %v", tc.name, d, got, tc.npCounts[d])
			}
			if got := e.Counts(admin, d); got != tc.adminCount[d] {
				t.Errorf("%s: admin-in counts for %s: %v, want %v", tc.name, d, got, tc.adminCount[d])
			}
			if got := e.Isolated(a, d); got != tc.aIsolated[d] {
				t.Errorf("%s: x/a isolated for %s: %v, want %v", tc.name, d, got, tc.aIsolated[d])
			}
			if got := e.Isolated(b, d); got != tc.bIsolated[d] {
				t.Errorf("%s: x/b isolated for %s: %v, want %v", tc.name, d, got, tc.bIsolated[d])
			}
		}
	}
}
