package lint

import (
	"slices"
	"testing"
)

// TestDomainNamesFindings: an allow-list of names followed by a Deny is
// matched by explain, but the agent does not learn the names' addresses
// yet, so in the kernel the names are denied: lint says so at the peer. In
// a Deny rule the API does not support names at all (an error); a name in
// the cluster's domain can only match a headless Service.
func TestDomainNamesFindings(t *testing.T) {
	got := lintYAML(t, base, `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: egress-names}
spec:
  priority: 10
  subject: {namespaces: {}}
  egress:
  - {name: apis, action: Allow, to: [{domainNames: [api.example.com, "*.example.org"]}]}
  - {name: internal, action: Allow, to: [{domainNames: [web.shop.svc.cluster.local]}]}
  - {name: no-ads, action: Deny, to: [{domainNames: ["*.ads.example"]}]}
  - {name: rest, action: Deny, to: [{networks: [0.0.0.0/0]}]}`)
	var lines []string
	for _, f := range got {
		switch f.Code {
		case CodeDomainNames, CodeDomainNamesAction, CodeDomainNamesCluster:
			lines = append(lines, short(f)+" | "+f.Message)
		}
	}
	// Errors first, then by field and code (lint's order).
	want := []string{
		"error domain-names-not-allow AdminNetworkPolicy egress-names spec.egress[2].to[0].domainNames | " +
			"domainNames in a Deny rule: the API supports them only in Allow (Accept) rules, so this peer matches no traffic, " +
			"and connections to *.ads.example meet the rules after it",
		"warning domain-names-not-enforced AdminNetworkPolicy egress-names spec.egress[0].to[0].domainNames | " +
			"the netpol agent does not enforce domainNames yet: explain and matrix match api.example.com, *.example.org (explain --to NAME), " +
			"but in the kernel this peer matches no traffic, so those connections meet the rules after it",
		"warning domain-names-cluster-local AdminNetworkPolicy egress-names spec.egress[1].to[0].domainNames | " +
			"web.shop.svc.cluster.local is in the cluster's domain: a Service's name resolves to its cluster IP, which policy never sees " +
			"(it applies after the Service translation, to the backends); only headless Services' names, which resolve to pod addresses, can match",
		"warning domain-names-not-enforced AdminNetworkPolicy egress-names spec.egress[1].to[0].domainNames | " +
			"the netpol agent does not enforce domainNames yet: explain and matrix match web.shop.svc.cluster.local (explain --to NAME), " +
			"but in the kernel this peer matches no traffic, so those connections meet the rules after it",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("findings\n%q\nwant\n%q", lines, want)
	}
}
