package lint

import (
	"slices"
	"testing"
)

// TestDomainNamesNotEnforced: netpol does not match domainNames peers yet
// (explain, matrix and the kernel leave such a rule out), so an allow-list
// of names followed by a Deny denies those names: lint says so, at the
// peer, naming what decides instead.
func TestDomainNamesNotEnforced(t *testing.T) {
	got := lintYAML(t, base, `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: egress-names}
spec:
  priority: 10
  subject: {namespaces: {}}
  egress:
  - {name: apis, action: Allow, to: [{domainNames: [api.example.com, "*.example.org"]}]}
  - {name: rest, action: Deny, to: [{networks: [0.0.0.0/0]}]}`)
	var lines []string
	for _, f := range got {
		if f.Code == CodeDomainNames {
			lines = append(lines, short(f)+" | "+f.Message)
		}
	}
	want := []string{"warning domain-names-not-enforced AdminNetworkPolicy egress-names spec.egress[0].to[0].domainNames | " +
		"netpol does not enforce domainNames yet: this peer matches no traffic (explain, matrix and the kernel leave it out), " +
		"so connections to api.example.com, *.example.org meet the rules after it"}
	if !slices.Equal(lines, want) {
		t.Errorf("findings\n%q\nwant\n%q", lines, want)
	}
}
