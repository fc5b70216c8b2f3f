package lint

import (
	"slices"
	"testing"
)

// TestDomainNamesFindings: the agent learns names' addresses from the
// cluster DNS, found as the Service kube-system/kube-dns: in an input
// without it, lint says at each peer that the kernel would deny the names.
// In a Deny rule the API does not support names at all (an error); a name
// in the cluster's domain can only match a headless Service.
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
			"the netpol agent learns the addresses of api.example.com, *.example.org from the cluster DNS's answers, and the input has no " +
			"Service kube-system/kube-dns to find it by: unless the agents run with --dns-server, this peer matches no traffic in the kernel, " +
			"so those connections meet the rules after it",
		"warning domain-names-cluster-local AdminNetworkPolicy egress-names spec.egress[1].to[0].domainNames | " +
			"web.shop.svc.cluster.local is in the cluster's domain: a Service's name resolves to its cluster IP, which policy never sees " +
			"(it applies after the Service translation, to the backends); only headless Services' names, which resolve to pod addresses, can match",
		"warning domain-names-not-enforced AdminNetworkPolicy egress-names spec.egress[1].to[0].domainNames | " +
			"the netpol agent learns the addresses of web.shop.svc.cluster.local from the cluster DNS's answers, and the input has no " +
			"Service kube-system/kube-dns to find it by: unless the agents run with --dns-server, this peer matches no traffic in the kernel, " +
			"so those connections meet the rules after it",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("findings\n%q\nwant\n%q", lines, want)
	}
}

// TestDomainNamesWithClusterDNS: with the Service kube-system/kube-dns in
// the input the agent has a server to learn from, and lint says nothing
// of enforcement.
func TestDomainNamesWithClusterDNS(t *testing.T) {
	got := lintYAML(t, base, `
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system}
spec: {clusterIP: 10.96.0.10, selector: {k8s-app: kube-dns}, ports: [{name: dns, port: 53, protocol: UDP}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: egress-names}
spec:
  priority: 10
  subject: {namespaces: {}}
  egress:
  - {name: apis, action: Allow, to: [{domainNames: [api.example.com]}]}
  - {name: rest, action: Deny, to: [{networks: [0.0.0.0/0]}]}`)
	for _, f := range got {
		if f.Code == CodeDomainNames {
			t.Errorf("with kube-system/kube-dns in the input: %s | %s", short(f), f.Message)
		}
	}
}
